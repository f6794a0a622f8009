package config

import "fmt"

// HMSAuth is authentication towards a metastore: a catalog's hms_auth keys, or
// the --auth* flags of `events tail`. Kerberos is SASL GSSAPI, what a metastore
// with hive.metastore.sasl.enabled=true requires.
type HMSAuth struct {
	Mechanism        string `yaml:"mechanism"`
	ServicePrincipal string `yaml:"service_principal"`
	ClientPrincipal  string `yaml:"client_principal"`
	Keytab           string `yaml:"keytab"`
	Krb5Conf         string `yaml:"krb5_conf"`
}

// AnySet reports whether a key other than mechanism is set (a --auth-* flag
// turns Kerberos on by itself).
func (a HMSAuth) AnySet() bool {
	return a.ServicePrincipal != "" || a.ClientPrincipal != "" || a.Keytab != "" || a.Krb5Conf != ""
}

// Kerberos is a metastore client's Kerberos login with the defaults filled in:
// the fields of hms.KerberosConfig, which this package does not import so that
// the configuration links nothing of the project but its name rules.
type Kerberos struct {
	ServicePrincipal string
	ClientPrincipal  string
	Keytab           string
	// CCache is the ticket cache (KRB5CCNAME), used when Keytab is empty.
	CCache string
	// Krb5Conf is the krb5.conf (KRB5_CONFIG, else /etc/krb5.conf).
	Krb5Conf string
}

// Kerberos checks the keys and returns the Kerberos login they describe, nil
// for mechanism none. It does not read the files: that is check's, given by
// the caller who can parse a keytab (Sources.CheckKerberos), so that a wrong
// path, a keytab without the principal's key or a malformed principal stops
// start-up, not every connection. A nil check skips it. name turns a key into
// what the user wrote; getenv reads KRB5_CONFIG and KRB5CCNAME for the defaults.
func (a HMSAuth) Kerberos(name func(key string) string, getenv func(string) string, check func(Kerberos) error) (*Kerberos, error) {
	switch a.Mechanism {
	case "", "none":
		if a.AnySet() {
			return nil, fmt.Errorf("%s = %q: want kerberos, since other %s keys are set; or remove them to connect without authentication",
				name("mechanism"), a.Mechanism, name(""))
		}
		return nil, nil
	case "kerberos":
	default:
		return nil, fmt.Errorf("%s = %q: want none or kerberos", name("mechanism"), a.Mechanism)
	}
	kc := &Kerberos{
		ServicePrincipal: a.ServicePrincipal,
		ClientPrincipal:  a.ClientPrincipal,
		Keytab:           a.Keytab,
		Krb5Conf:         a.Krb5Conf,
	}
	if kc.Krb5Conf == "" {
		kc.Krb5Conf = getenv("KRB5_CONFIG")
	}
	if kc.Krb5Conf == "" {
		kc.Krb5Conf = "/etc/krb5.conf"
	}
	if kc.Keytab == "" {
		kc.CCache = getenv("KRB5CCNAME")
	}
	if check != nil {
		if err := check(*kc); err != nil {
			return nil, fmt.Errorf("%s: %w", name(""), err)
		}
	}
	return kc, nil
}

// CatalogAuthKey names a catalog's hms_auth keys in errors.
func CatalogAuthKey(i int) func(string) string {
	return func(key string) string {
		if key == "" {
			return fmt.Sprintf("catalogs[%d].hms_auth", i)
		}
		return fmt.Sprintf("catalogs[%d].hms_auth.%s", i, key)
	}
}
