package sidecar

import (
	"os"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/config"
)

// LoadConfig is config.Load with the Kerberos check only the metastore client
// can make (reading the krb5.conf and the keytab), so that `run`, `check` and
// the bench's sidecar refuse a bad hms_auth at start, in one validation.
func LoadConfig(src config.Sources) (config.Config, config.Secrets, error) {
	src.CheckKerberos = checkKerberos
	return config.Load(src)
}

func checkKerberos(k config.Kerberos) error { return hms.CheckKerberos(hmsKerberos(k)) }

func hmsKerberos(k config.Kerberos) hms.KerberosConfig {
	return hms.KerberosConfig{ServicePrincipal: k.ServicePrincipal, ClientPrincipal: k.ClientPrincipal,
		Keytab: k.Keytab, CCache: k.CCache, Krb5Conf: k.Krb5Conf}
}

// KerberosConfig is the metastore client's Kerberos configuration of a, nil
// for mechanism none, checked as LoadConfig checks it; name turns a key into
// what the user wrote (a catalog's hms_auth keys, or the --auth* flags).
func KerberosConfig(a config.HMSAuth, name func(key string) string) (*hms.KerberosConfig, error) {
	k, err := a.Kerberos(name, os.Getenv, checkKerberos)
	if err != nil || k == nil {
		return nil, err
	}
	kc := hmsKerberos(*k)
	return &kc, nil
}
