package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
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
		cfg, _, err := sidecar.LoadConfig(config.Sources{File: file, Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m"})})
		if err != nil {
			t.Fatalf("hms_tls %s: %v", hmsTLS, err)
		}
		tc, err := cfg.Catalogs[0].HMSTLS.ClientConfig(config.CatalogTLSKey(0))
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

// `events tail` reaches a metastore that requires TLS and a client certificate
// through its --tls-* flags, and says what to fix when the CA is missing.
func TestEventsTailTLS(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clientCert, err := hmstest.NewKeyPair("hmssync")
	must(t, err)
	srv := hmstest.NewServer(hmstest.WithClientCAs(clientCert.Pool()))
	defer srv.Close()
	must(t, srv.CreateDatabase("sales"))
	ca, cert, key := tlsFiles(t, srv, clientCert)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"hmssync", "events", "tail", "--hms", srv.URI(), "--from", "0", "--decode", "--poll", "10ms",
			"--tls-ca", ca, "--tls-cert", cert, "--tls-key", key, "--tls-server-name", "localhost"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"op":"REGISTER_DATABASE","db":"sales"`) {
		select {
		case err := <-done:
			t.Fatalf("events tail over TLS ended: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("events tail over TLS printed after 10s:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
		time.Sleep(5 * time.Millisecond) // polling the output for a condition
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("events tail over TLS: %v", err)
	}

	// Without the CA the metastore's certificate is not trusted: the command
	// fails and names the flag to set.
	app = newApp()
	app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
	err = app.RunContext(context.Background(), []string{"hmssync", "events", "tail", "--hms", srv.URI(), "--tls-cert", cert, "--tls-key", key})
	if err == nil || !strings.Contains(err.Error(), "--tls-ca") || !strings.Contains(err.Error(), srv.URI()) {
		t.Fatalf("events tail without --tls-ca: %v; want an error naming the URI and --tls-ca", err)
	}
	// A bad file is refused before connecting, naming the flag.
	err = app.RunContext(context.Background(), []string{"hmssync", "events", "tail", "--hms", srv.URI(), "--tls-cert", cert})
	if err == nil || !strings.Contains(err.Error(), "--tls-key") {
		t.Fatalf("events tail with --tls-cert alone: %v; want an error naming --tls-key", err)
	}
}
