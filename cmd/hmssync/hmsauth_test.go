package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/sasltest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
	"github.com/hmssync/hmssync/internal/testutil/kdctest"
)

// Mistakes in hms_auth stop start-up, naming the key.
func TestHMSAuthInvalidValuesAreNamed(t *testing.T) {
	t.Setenv("KRB5CCNAME", "")
	conf := writeFile(t, "[libdefaults]\n default_realm = EXAMPLE.COM\n")
	for name, tc := range map[string]struct {
		auth string
		want []string
	}{
		"unknown mechanism":      {"{mechanism: ldap}", []string{"catalogs[0].hms_auth.mechanism", `"ldap"`, "none or kerberos"}},
		"keys without kerberos":  {"{keytab: /k}", []string{"catalogs[0].hms_auth.mechanism", "want kerberos"}},
		"no service principal":   {"{mechanism: kerberos, krb5_conf: " + conf + "}", []string{"catalogs[0].hms_auth", "hms_auth.service_principal", "hive/_HOST@EXAMPLE.COM"}},
		"keytab missing":         {"{mechanism: kerberos, krb5_conf: " + conf + ", service_principal: hive/_HOST@EXAMPLE.COM, client_principal: s, keytab: /nonexistent/s.keytab}", []string{"hms_auth.keytab", "/nonexistent/s.keytab"}},
		"krb5.conf missing":      {"{mechanism: kerberos, krb5_conf: /nonexistent/krb5.conf, service_principal: hive/_HOST@EXAMPLE.COM}", []string{"hms_auth.krb5_conf", "/nonexistent/krb5.conf"}},
		"no keytab and no cache": {"{mechanism: kerberos, krb5_conf: " + conf + ", service_principal: hive/_HOST@EXAMPLE.COM}", []string{"KRB5CCNAME", "hms_auth.keytab"}},
	} {
		file := writeFile(t, fmt.Sprintf("catalogs:\n  - {name: hive, hms_auth: %s}\n", tc.auth))
		_, _, err := sidecar.LoadConfig(config.Sources{File: file, Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m"})})
		if err == nil {
			t.Errorf("%s: loaded", name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\ndoes not mention %q", name, err, w)
			}
		}
	}
}

// kerberizedMetastore is a realm with a client principal and its keytab, and
// a fake metastore requiring SASL as hive/localhost; the caller closes it.
func kerberizedMetastore(t *testing.T) (kdc *kdctest.KDC, srv *hmstest.Server, uri, clientKT string) {
	t.Helper()
	kdc = kdctest.Start(t, kdctest.Options{})
	kdc.AddPrincipal(t, "sync")
	kdc.AddPrincipal(t, "hive/localhost")
	kt, err := keytab.Load(kdc.Keytab(t, "hive/localhost"))
	must(t, err)
	srv = hmstest.NewServer(hmstest.WithSASL(&sasltest.Acceptor{Keytab: kt, Subkey: true}))
	_, port, _ := net.SplitHostPort(srv.Addr())
	return kdc, srv, "thrift://localhost:" + port, kdc.Keytab(t, "sync")
}

// A catalog's hms_auth keys give a client that authenticates to a metastore
// requiring Kerberos; with hms_framed or hms_user they are refused.
func TestHMSAuthConfigReachesTheMetastore(t *testing.T) {
	kdc, srv, uri, clientKT := kerberizedMetastore(t)
	defer srv.Close()
	must(t, srv.CreateDatabase("sales"))
	auth := fmt.Sprintf("{mechanism: kerberos, service_principal: 'hive/_HOST@%s', client_principal: 'sync@%s', keytab: %q, krb5_conf: %q}",
		kdc.Realm, kdc.Realm, clientKT, kdc.Krb5Conf)
	file := writeFile(t, fmt.Sprintf("catalogs:\n  - {name: hive, hms_uris: [%q], hms_auth: %s}\n", uri, auth))
	cfg, _, err := sidecar.LoadConfig(config.Sources{File: file, Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m"})})
	must(t, err)
	krb, err := sidecar.KerberosConfig(cfg.Catalogs[0].HMSAuth, config.CatalogAuthKey(0))
	must(t, err)
	c, err := hms.NewClient(hms.ClientConfig{URIs: cfg.Catalogs[0].HMSURIs, Kerberos: krb})
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dbs, err := c.Databases(ctx)
	if err != nil || len(dbs) != 1 || dbs[0] != "sales" {
		t.Fatalf("Databases over Kerberos = %v, %v", dbs, err)
	}
	if got := srv.SASLClients(); len(got) != 1 || got[0] != "sync@"+kdc.Realm {
		t.Errorf("metastore authenticated %q, want sync@%s", got, kdc.Realm)
	}

	for key, extra := range map[string]string{"catalogs[0].hms_framed": "hms_framed: true", "catalogs[0].hms_user": "hms_user: hive"} {
		file := writeFile(t, fmt.Sprintf("catalogs:\n  - {name: hive, hms_uris: [%q], %s, hms_auth: %s}\n", uri, extra, auth))
		_, _, err := sidecar.LoadConfig(config.Sources{File: file, Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m"})})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("hms_auth with %s: %v; want an error naming %s", extra, err, key)
		}
	}
}

// `events tail` with the --auth-* flags tails a metastore requiring Kerberos;
// without them it is told what the metastore requires.
func TestEventsTailKerberos(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	kdc, srv, uri, clientKT := kerberizedMetastore(t)
	defer kdc.Stop() // before goleak looks: its process has a waiting goroutine
	defer srv.Close()
	must(t, srv.CreateDatabase("sales"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"hmssync", "events", "tail", "--hms", uri, "--from", "0", "--decode", "--poll", "10ms",
			"--auth-service-principal", "hive/_HOST@" + kdc.Realm, "--auth-client-principal", "sync@" + kdc.Realm,
			"--auth-keytab", clientKT, "--auth-krb5-conf", kdc.Krb5Conf})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"op":"REGISTER_DATABASE","db":"sales"`) {
		select {
		case err := <-done:
			t.Fatalf("events tail over Kerberos ended: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("events tail over Kerberos printed after 10s:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
		time.Sleep(5 * time.Millisecond) // polling the output for a condition
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("events tail over Kerberos: %v", err)
	}

	app = newApp()
	app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
	err := app.RunContext(context.Background(), []string{"hmssync", "events", "tail", "--hms", uri})
	if err == nil || !strings.Contains(err.Error(), "hive.metastore.sasl.enabled") || !strings.Contains(err.Error(), "--auth kerberos") {
		t.Fatalf("events tail without --auth: %v; want an error naming hive.metastore.sasl.enabled and --auth kerberos", err)
	}
	err = app.RunContext(context.Background(), []string{"hmssync", "events", "tail", "--hms", uri, "--auth-keytab", "/nonexistent/k", "--auth-krb5-conf", kdc.Krb5Conf})
	if err == nil || !strings.Contains(err.Error(), "--auth-*") || !strings.Contains(err.Error(), "service_principal") {
		t.Fatalf("events tail with only --auth-keytab: %v; want an error about the missing service principal", err)
	}
}
