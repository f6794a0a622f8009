package hms_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// A client trusting the fake's certificate syncs over TLS, also after the
// metastore dropped its connection (a new handshake); a plain client cannot
// talk to the same server, so the calls did go through TLS.
func TestTLS(t *testing.T) {
	s := hmstest.NewServer(hmstest.WithTLS())
	defer s.Close()
	appendN(s, 3, "OPEN_TXN")
	must(t, s.CreateDatabase("sales"))
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, TLS: s.ClientTLSConfig()})
	ctx := ctxT(t)
	f, err := c.NextEvents(ctx, 0, 10, nil)
	if err != nil {
		t.Fatalf("NextEvents over TLS: %v", err)
	}
	if got := ids(f.Events); len(got) != 4 || got[0] != 1 || got[3] != 4 || f.Continuity != hms.Contiguous {
		t.Fatalf("NextEvents over TLS = %v %v; want events 1-4 (3 appended, 1 database created), contiguous", got, f.Continuity)
	}
	if dbs, err := c.Databases(ctx); err != nil || len(dbs) != 1 || dbs[0] != "sales" {
		t.Fatalf("Databases over TLS = %v, %v", dbs, err)
	}
	s.DropConnections()
	if cur, err := c.CurrentEventID(ctx); err != nil || cur != 4 {
		t.Fatalf("CurrentEventID over TLS after a dropped connection = %d, %v; want 4", cur, err)
	}

	plain := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, CallTimeout: 2 * time.Second})
	if _, err := plain.CurrentEventID(ctxT(t)); err == nil {
		t.Fatal("a client without TLS got an answer from a TLS metastore")
	}
}

// A certificate the client does not trust fails the connection with an error
// that names the URI, the cause and what to configure.
func TestTLSUntrustedCertificate(t *testing.T) {
	s := hmstest.NewServer(hmstest.WithTLS())
	defer s.Close()
	other, err := hmstest.NewKeyPair("127.0.0.1")
	must(t, err)
	for name, cfg := range map[string]*tls.Config{
		"system roots":        {MinVersion: tls.VersionTLS12},
		"another certificate": {RootCAs: other.Pool(), MinVersion: tls.VersionTLS12},
	} {
		c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, TLS: cfg})
		_, err := c.CurrentEventID(ctxT(t))
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Fatalf("%s: CurrentEventID = %v; want an unknown-authority error", name, err)
		}
		for _, want := range []string{s.URI(), "TLS handshake", "hms_tls.ca_file", "--tls-ca"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", name, err, want)
			}
		}
		if strings.Contains(err.Error(), "metastores run") {
			t.Errorf("%s: error %q sends the reader to check that the metastores run; they do", name, err)
		}
	}
}

// The other handshake failures say what to check, too.
func TestTLSMisconfigurationHints(t *testing.T) {
	tlsSrv := hmstest.NewServer(hmstest.WithTLS())
	defer tlsSrv.Close()
	plainSrv := hmstest.NewServer()
	defer plainSrv.Close()

	wrongName := tlsSrv.ClientTLSConfig()
	wrongName.ServerName = "metastore.example"
	cases := []struct {
		name string
		cfg  hms.ClientConfig
		want []string
	}{
		{"name not in the certificate", hms.ClientConfig{URIs: []string{tlsSrv.URI()}, TLS: wrongName},
			[]string{tlsSrv.URI(), "metastore.example", "hms_tls.server_name"}},
		{"TLS client, plain metastore", hms.ClientConfig{URIs: []string{plainSrv.URI()}, TLS: tlsSrv.ClientTLSConfig(), DialTimeout: time.Second},
			[]string{plainSrv.URI(), "hive.metastore.use.SSL"}},
		{"plain client, TLS metastore", hms.ClientConfig{URIs: []string{tlsSrv.URI()}, CallTimeout: time.Second},
			[]string{tlsSrv.URI(), "hms_tls", "hive.metastore.use.SSL"}},
	}
	for _, c := range cases {
		cl := newClient(t, c.cfg)
		_, err := cl.CurrentEventID(ctxT(t))
		if err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
}

// A metastore that requires client certificates accepts a client presenting one
// it trusts and refuses one presenting none.
func TestTLSClientCertificate(t *testing.T) {
	clientCert, err := hmstest.NewKeyPair("hmssync")
	must(t, err)
	s := hmstest.NewServer(hmstest.WithClientCAs(clientCert.Pool()))
	defer s.Close()
	appendN(s, 2, "OPEN_TXN")

	withCert := s.ClientTLSConfig()
	withCert.Certificates = []tls.Certificate{clientCert.TLS}
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, TLS: withCert})
	if cur, err := c.CurrentEventID(ctxT(t)); err != nil || cur != 2 {
		t.Fatalf("CurrentEventID with a trusted client certificate = %d, %v; want 2", cur, err)
	}

	without := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, TLS: s.ClientTLSConfig()})
	if _, err := without.CurrentEventID(ctxT(t)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("CurrentEventID without a client certificate: %v; want a refusal about the certificate", err)
	}
}
