package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// tlsFiles writes the fake metastore's certificate (the CA a client trusts) and a
// client certificate with its key, returning their paths.
func tlsFiles(t *testing.T, srv *hmstest.Server, client *hmstest.KeyPair) (ca, cert, key string) {
	t.Helper()
	dir := t.TempDir()
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for f, b := range map[string][]byte{ca: srv.CertPEM(), cert: client.CertPEM, key: client.KeyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, cert, key
}

// A catalog's hms_tls keys, loaded from the file, give a client that talks to a
// metastore requiring TLS and a client certificate; each key matters.
func TestHMSTLSConfigReachesTheMetastore(t *testing.T) {
	clientCert, err := hmstest.NewKeyPair("hmssync")
	must(t, err)
	srv := hmstest.NewServer(hmstest.WithClientCAs(clientCert.Pool()))
	defer srv.Close()
	must(t, srv.CreateDatabase("sales"))
	ca, cert, key := tlsFiles(t, srv, clientCert)

	connect := func(hmsTLS string) error {
		t.Helper()
		file := writeFile(t, fmt.Sprintf("catalogs:\n  - {name: hive, hms_uris: [%q], hms_tls: %s}\n", srv.URI(), hmsTLS))
		cfg, _, err := loadConfig(configSources{File: file, Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m"})})
		if err != nil {
			t.Fatalf("hms_tls %s: %v", hmsTLS, err)
		}
		tc, err := cfg.Catalogs[0].HMSTLS.clientConfig(catalogTLSKey(0))
		if err != nil {
			t.Fatalf("hms_tls %s: validated, but building the client configuration failed: %v", hmsTLS, err)
		}
		c, err := hms.NewClient(hms.ClientConfig{URIs: cfg.Catalogs[0].HMSURIs, TLS: tc, DialTimeout: 2 * time.Second, CallTimeout: 2 * time.Second})
		must(t, err)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		dbs, err := c.Databases(ctx)
		if err == nil && (len(dbs) != 1 || dbs[0] != "sales") {
			t.Fatalf("hms_tls %s: Databases = %v, want [sales]", hmsTLS, dbs)
		}
		return err
	}

	full := fmt.Sprintf("{enabled: true, ca_file: %q, cert_file: %q, key_file: %q, server_name: localhost}", ca, cert, key)
	if err := connect(full); err != nil {
		t.Fatalf("hms_tls with every key: %v", err)
	}
	for what, c := range map[string]struct{ hmsTLS, want string }{
		"without ca_file (system CAs)":  {fmt.Sprintf("{enabled: true, cert_file: %q, key_file: %q}", cert, key), "hms_tls.ca_file"},
		"without a client certificate":  {fmt.Sprintf("{enabled: true, ca_file: %q}", ca), "certificate"},
		"a name not in the certificate": {fmt.Sprintf("{enabled: true, ca_file: %q, cert_file: %q, key_file: %q, server_name: hms.example}", ca, cert, key), "hms_tls.server_name"},
	} {
		if err := connect(c.hmsTLS); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("hms_tls %s: %v; want an error mentioning %q", what, err, c.want)
		}
	}
	// insecure_skip_verify trusts anything (the client certificate is still needed).
	if err := connect(fmt.Sprintf("{enabled: true, insecure_skip_verify: true, cert_file: %q, key_file: %q}", cert, key)); err != nil {
		t.Errorf("hms_tls with insecure_skip_verify: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
