package main

import (
	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
)

// kerberosFlags are the --auth* flags of the commands that reach a metastore
// outside a sidecar (events tail, dev fe --hms): a catalog's hms_auth keys.
func kerberosFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "auth", Category: "Kerberos", Value: "none", Usage: "`MECHANISM` towards the metastore: none, or kerberos (SASL GSSAPI, for hive.metastore.sasl.enabled=true); every --auth-* flag implies kerberos"},
		&cli.StringFlag{Name: "auth-service-principal", Category: "Kerberos", Usage: "the metastore's `PRINCIPAL`, e.g. hive/_HOST@EXAMPLE.COM (_HOST: each URI's host)"},
		&cli.StringFlag{Name: "auth-client-principal", Category: "Kerberos", Usage: "this client's `PRINCIPAL`, name@REALM (with a ticket cache: default the cache's)"},
		&cli.StringFlag{Name: "auth-keytab", Category: "Kerberos", Usage: "keytab `FILE` of the client principal (default: the ticket cache in KRB5CCNAME)"},
		&cli.StringFlag{Name: "auth-krb5-conf", Category: "Kerberos", Usage: "krb5.conf `FILE` (default: KRB5_CONFIG, else /etc/krb5.conf)"},
	}
}

// kerberosFlagNames maps the hms_auth keys to the flags, for errors.
var kerberosFlagNames = map[string]string{
	"mechanism": "--auth", "service_principal": "--auth-service-principal", "client_principal": "--auth-client-principal",
	"keytab": "--auth-keytab", "krb5_conf": "--auth-krb5-conf", "": "--auth-*",
}

// kerberosFromFlags reads the --auth* flags, with the same checks as a
// catalog's hms_auth; a --auth-* flag turns Kerberos on by itself.
func kerberosFromFlags(c *cli.Context) (*hms.KerberosConfig, error) {
	a := config.HMSAuth{
		Mechanism:        c.String("auth"),
		ServicePrincipal: c.String("auth-service-principal"),
		ClientPrincipal:  c.String("auth-client-principal"),
		Keytab:           c.String("auth-keytab"),
		Krb5Conf:         c.String("auth-krb5-conf"),
	}
	if a.AnySet() && !c.IsSet("auth") {
		a.Mechanism = "kerberos"
	}
	return sidecar.KerberosConfig(a, func(key string) string { return kerberosFlagNames[key] })
}
