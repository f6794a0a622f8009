package main

import (
	"os"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/config"
)

// loadConfig is config.Load with the Kerberos check only the metastore client
// can make (reading the krb5.conf and the keytab), so that `run`, `check` and
// the bench's sidecar refuse a bad hms_auth at start, as one validation.
func loadConfig(src config.Sources) (config.Config, config.Secrets, error) {
	src.CheckKerberos = checkKerberos
	return config.Load(src)
}

func checkKerberos(k config.Kerberos) error { return hms.CheckKerberos(hmsKerberos(k)) }

func hmsKerberos(k config.Kerberos) hms.KerberosConfig {
	return hms.KerberosConfig{ServicePrincipal: k.ServicePrincipal, ClientPrincipal: k.ClientPrincipal,
		Keytab: k.Keytab, CCache: k.CCache, Krb5Conf: k.Krb5Conf}
}

// kerberosConfig is the metastore client's Kerberos configuration of a, nil for
// mechanism none, checked as loadConfig checks it; name turns a key into what
// the user wrote.
func kerberosConfig(a config.HMSAuth, name func(key string) string) (*hms.KerberosConfig, error) {
	k, err := a.Kerberos(name, os.Getenv, checkKerberos)
	if err != nil || k == nil {
		return nil, err
	}
	kc := hmsKerberos(*k)
	return &kc, nil
}
