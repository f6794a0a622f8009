package main

import (
	"fmt"

	"github.com/hmssync/hmssync/hms"
)

// hmsAuthConfig is authentication towards a metastore: a catalog's hms_auth
// keys, or the --auth* flags of `events tail`. Kerberos is SASL GSSAPI, what a
// metastore with hive.metastore.sasl.enabled=true requires.
type hmsAuthConfig struct {
	Mechanism        string `yaml:"mechanism"`
	ServicePrincipal string `yaml:"service_principal"`
	ClientPrincipal  string `yaml:"client_principal"`
	Keytab           string `yaml:"keytab"`
	Krb5Conf         string `yaml:"krb5_conf"`
}

func (a hmsAuthConfig) anySet() bool {
	return a.ServicePrincipal != "" || a.ClientPrincipal != "" || a.Keytab != "" || a.Krb5Conf != ""
}

// kerberosConfig checks the keys and returns the metastore client's Kerberos
// configuration, nil for mechanism none. It reads the krb5.conf and the keytab
// (or checks the ticket cache) so that a wrong path, a keytab without the
// principal's key or a malformed principal stops start-up, not every connection.
// name turns a key into what the user wrote; getenv reads KRB5_CONFIG and
// KRB5CCNAME for the defaults.
func (a hmsAuthConfig) kerberosConfig(name func(key string) string, getenv func(string) string) (*hms.KerberosConfig, error) {
	switch a.Mechanism {
	case "", "none":
		if a.anySet() {
			return nil, fmt.Errorf("%s = %q: want kerberos, since other %s keys are set; or remove them to connect without authentication",
				name("mechanism"), a.Mechanism, name(""))
		}
		return nil, nil
	case "kerberos":
	default:
		return nil, fmt.Errorf("%s = %q: want none or kerberos", name("mechanism"), a.Mechanism)
	}
	kc := &hms.KerberosConfig{
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
	if err := hms.CheckKerberos(*kc); err != nil {
		return nil, fmt.Errorf("%s: %w", name(""), err)
	}
	return kc, nil
}

// catalogAuthKey names a catalog's hms_auth key in errors.
func catalogAuthKey(i int) func(string) string {
	return func(key string) string {
		if key == "" {
			return fmt.Sprintf("catalogs[%d].hms_auth", i)
		}
		return fmt.Sprintf("catalogs[%d].hms_auth.%s", i, key)
	}
}
