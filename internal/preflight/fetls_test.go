package preflight_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/preflight"
)

// An FE over HTTPS whose CA only fe.tls knows: the FE checks pass with the
// client built from fe.tls, and fail without it.
func TestAnHTTPSFEIsCheckedWithTheConfiguredClient(t *testing.T) {
	kp, err := hmstest.NewKeyPair("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, fetest.Options{Catalogs: hiveCatalog, TLS: &tls.Config{Certificates: []tls.Certificate{kp.TLS}}})
	target := w.target()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: kp.Pool(), MinVersion: tls.VersionTLS12}
	target.FE.Client = &http.Client{Transport: tr}
	rs := preflight.Run(context.Background(), target)
	for _, sub := range []string{"FE " + w.fe.URL, "catalog hive: on the FE"} {
		if r := find(t, rs, sub); !r.OK {
			t.Errorf("with the FE's CA: %+v", r)
		}
	}
	target.FE.Client = nil
	if r := find(t, preflight.Run(context.Background(), target), "FE "+w.fe.URL); r.OK {
		t.Errorf("without the FE's CA the check passed: %+v", r)
	}
}
