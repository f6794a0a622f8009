package main

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
)

// checkFE builds the applier as `run` does (feHTTPClient) and checks the FE.
func checkFE(t *testing.T, f config.FE, password string) error {
	t.Helper()
	hc, err := config.FEHTTPClient(f)
	if err != nil {
		return err
	}
	ap, err := applier.New(applier.Config{Dialect: "doris", URL: f.URL, User: "root", Password: password, Timeout: 5 * time.Second, Client: hc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return ap.Check(ctx)
}

func writePEM(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An FE over HTTPS: verified with fe.tls.ca_file, with a client certificate
// when the FE requires one, and refused when the FE cannot be verified.
func TestFEOverHTTPS(t *testing.T) {
	server, err := hmstest.NewKeyPair("127.0.0.1", "fe.test")
	if err != nil {
		t.Fatal(err)
	}
	client, err := hmstest.NewKeyPair("hmssync")
	if err != nil {
		t.Fatal(err)
	}
	fe := fetest.NewServer(fetest.Options{Password: "pw", TLS: &tls.Config{
		Certificates: []tls.Certificate{server.TLS}, ClientCAs: client.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}})
	defer fe.Close()
	if !strings.HasPrefix(fe.URL, "https://") {
		t.Fatalf("the fake FE's URL %s is not https://", fe.URL)
	}
	ca := writePEM(t, "ca.pem", server.CertPEM)
	cert, key := writePEM(t, "cert.pem", client.CertPEM), writePEM(t, "key.pem", client.KeyPEM)

	full := config.FE{URL: fe.URL, TLS: config.FETLS{CAFile: ca, CertFile: cert, KeyFile: key}}
	if err := checkFE(t, full, "pw"); err != nil {
		t.Fatalf("with the CA and a client certificate: %v", err)
	}
	named := full
	named.URL = strings.Replace(fe.URL, "127.0.0.1", "localhost", 1)
	named.TLS.ServerName = "fe.test"
	if err := checkFE(t, named, "pw"); err != nil {
		t.Errorf("with server_name fe.test (the URL's host localhost is not in the certificate): %v", err)
	}
	noCA := full
	noCA.TLS.CAFile = ""
	if err := checkFE(t, noCA, "pw"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA (system roots): %v; want a certificate error", err)
	}
	noCert := full
	noCert.TLS.CertFile, noCert.TLS.KeyFile = "", ""
	if err := checkFE(t, noCert, "pw"); err == nil {
		t.Errorf("without the client certificate the FE requires: accepted")
	}
	skip := config.FE{URL: fe.URL, TLS: config.FETLS{CertFile: cert, KeyFile: key, InsecureSkipVerify: true}}
	if err := checkFE(t, skip, "pw"); err != nil {
		t.Errorf("insecure_skip_verify: %v", err)
	}
	if _, err := config.FEHTTPClient(config.FE{URL: "http://127.0.0.1:8030", TLS: config.FETLS{CAFile: ca}}); err == nil || !strings.Contains(err.Error(), "https://") {
		t.Errorf("fe.tls with an http:// url: %v; want it refused", err)
	}
}
