package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/testutil"
)

// `dev hms --tls FILE` serves TLS and writes the certificate a client must trust
// to FILE before it announces itself.
func TestDevHMSTLS(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	listen, control := freeAddr(t), freeAddr(t)
	caFile := filepath.Join(t.TempDir(), "hms-ca.pem")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut syncBuffer
	app := newApp()
	app.ErrWriter = &errOut
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"hmssync", "dev", "hms", "--listen", listen, "--control", control, "--tls", caFile})
	}()
	testutil.Await(t, 10*time.Second, "dev hms to announce itself", func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("dev hms ended: %v\n%s", err, errOut.String())
		default:
		}
		return strings.Contains(errOut.String(), "fake metastore on"), errOut.String()
	})
	if !strings.Contains(errOut.String(), caFile) {
		t.Errorf("dev hms start line %q does not name the certificate file", errOut.String())
	}

	resp, err := http.Post("http://"+control+"/events", "application/x-ndjson",
		strings.NewReader(`{"eventType":"CREATE_DATABASE","dbName":"a","message":"{\"db\":\"a\"}","messageFormat":"json-0.2"}`+"\n"))
	must(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp, err = http.Get("http://" + control + "/state")
	must(t, err)
	state, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(state), `"tls":true`) {
		t.Errorf("GET /state = %s; want tls true", state)
	}

	pem, err := os.ReadFile(caFile)
	must(t, err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("--tls file holds no certificate:\n%s", pem)
	}
	c, err := hms.NewClient(hms.ClientConfig{URIs: []string{"thrift://" + listen}, TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	must(t, err)
	defer c.Close()
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if cur, err := c.CurrentEventID(cctx); err != nil || cur != 1 {
		t.Fatalf("CurrentEventID over TLS trusting the --tls file = %d, %v; want the posted event 1", cur, err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("dev hms: %v", err)
	}
}
