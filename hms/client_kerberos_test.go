package hms_test

import (
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/sasltest"
	"github.com/hmssync/hmssync/internal/testutil/kdctest"
)

// kerberized is a realm with a client principal "sync" and a metastore
// principal per host, and fake metastores that require SASL.
type kerberized struct {
	kdc      *kdctest.KDC
	clientKT string
}

func newKerberized(t *testing.T, opts kdctest.Options) *kerberized {
	t.Helper()
	kdc := kdctest.Start(t, opts)
	kdc.AddPrincipal(t, "sync")
	return &kerberized{kdc: kdc, clientKT: kdc.Keytab(t, "sync")}
}

// metastore starts a fake metastore requiring SASL with the keys of
// hive/<host>, listening on 127.0.0.1, and returns it with its URI by host.
func (k *kerberized) metastore(t *testing.T, host string, acc sasltest.Acceptor, opts ...hmstest.Option) (*hmstest.Server, string) {
	t.Helper()
	k.kdc.AddPrincipal(t, "hive/"+host)
	kt, err := keytab.Load(k.kdc.Keytab(t, "hive/"+host))
	if err != nil {
		t.Fatal(err)
	}
	acc.Keytab = kt
	s := hmstest.NewServer(append(opts, hmstest.WithSASL(&acc))...)
	t.Cleanup(s.Close)
	_, port, _ := net.SplitHostPort(s.Addr())
	return s, "thrift://" + net.JoinHostPort(host, port)
}

func (k *kerberized) config() *hms.KerberosConfig {
	return &hms.KerberosConfig{
		ServicePrincipal: "hive/_HOST@" + k.kdc.Realm,
		ClientPrincipal:  "sync@" + k.kdc.Realm,
		Keytab:           k.clientKT,
		Krb5Conf:         k.kdc.Krb5Conf,
	}
}

// A client with a keytab reads from a metastore that requires Kerberos, with
// each QOP the client supports and with an acceptor subkey; after the
// metastore dropped the connection it authenticates again.
func TestKerberos(t *testing.T) {
	k := newKerberized(t, kdctest.Options{})
	for name, tc := range map[string]struct {
		acc sasltest.Acceptor
		qop string
	}{
		"auth":                  {sasltest.Acceptor{}, "auth"},
		"auth, acceptor subkey": {sasltest.Acceptor{Subkey: true}, "auth"},
		"auth-int, subkey":      {sasltest.Acceptor{Subkey: true, Layers: sasltest.LayerIntegrity, MaxSize: 4096}, "auth-int"},
	} {
		t.Run(name, func(t *testing.T) {
			s, uri := k.metastore(t, "localhost", tc.acc)
			appendN(s, 300, "OPEN_TXN") // a reply of several wrapped frames under auth-int
			core, logs := observer.New(zapcore.InfoLevel)
			c := newClient(t, hms.ClientConfig{URIs: []string{uri}, Kerberos: k.config(), Logger: zap.New(core)})
			f, err := c.NextEvents(ctxT(t), 0, 1000, nil)
			if err != nil {
				t.Fatalf("NextEvents: %v", err)
			}
			if len(f.Events) != 300 || f.Events[299].ID != 300 {
				t.Fatalf("got %d events, want 300", len(f.Events))
			}
			s.DropConnections()
			if cur, err := c.CurrentEventID(ctxT(t)); err != nil || cur != 300 {
				t.Fatalf("CurrentEventID after a dropped connection = %d, %v; want 300", cur, err)
			}
			want := []string{"sync@" + kdctest.Realm, "sync@" + kdctest.Realm}
			if got := s.SASLClients(); !slices.Equal(got, want) {
				t.Errorf("metastore authenticated %q, want %q (one per connection)", got, want)
			}
			connected := logs.FilterMessage("connected to metastore").All()
			if len(connected) != 2 || connected[0].ContextMap()["sasl_qop"] != tc.qop {
				t.Errorf("connection logs %v, want two, with sasl_qop %s", connected, tc.qop)
			}
		})
	}
}

// Kerberos inside TLS, as a metastore with both hive.metastore.use.SSL and
// SASL has it.
func TestKerberosOverTLS(t *testing.T) {
	k := newKerberized(t, kdctest.Options{})
	s, uri := k.metastore(t, "localhost", sasltest.Acceptor{Subkey: true}, hmstest.WithTLS())
	tc := s.ClientTLSConfig()
	tc.ServerName = "127.0.0.1"
	c := newClient(t, hms.ClientConfig{URIs: []string{uri}, Kerberos: k.config(), TLS: tc})
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Fatalf("CurrentEventID over TLS and SASL: %v", err)
	}
	if len(s.SASLClients()) != 1 {
		t.Errorf("metastore authenticated %q, want one client", s.SASLClients())
	}
}

// With several URIs each metastore is asked for a ticket of its own host's
// principal (_HOST): each fake holds only its own principal's keys.
func TestKerberosHostPerURI(t *testing.T) {
	k := newKerberized(t, kdctest.Options{})
	a, uriA := k.metastore(t, "localhost", sasltest.Acceptor{})
	b, uriB := k.metastore(t, "127.0.0.1", sasltest.Acceptor{})
	c := newClient(t, hms.ClientConfig{URIs: []string{uriA, uriB}, Kerberos: k.config()})
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// Whichever answered first goes away; the other must accept its ticket.
	first, second := a, b
	if len(a.SASLClients()) == 0 {
		first, second = b, a
	}
	first.Down()
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Fatalf("after the first metastore went down: %v", err)
	}
	if len(second.SASLClients()) != 1 || second.SASLFailures() != 0 {
		t.Errorf("second metastore: clients %q, failures %d; want one client authenticated with its own principal", second.SASLClients(), second.SASLFailures())
	}
}

// Configuration mistakes found at start-up name the key to fix.
func TestKerberosConfigAtStartup(t *testing.T) {
	k := newKerberized(t, kdctest.Options{})
	for name, tc := range map[string]struct {
		edit func(*hms.KerberosConfig)
		want []string
	}{
		"keytab missing":         {func(c *hms.KerberosConfig) { c.Keytab = filepath.Join(t.TempDir(), "none.keytab") }, []string{"hms_auth.keytab", "none.keytab"}},
		"keytab not a keytab":    {func(c *hms.KerberosConfig) { c.Keytab = k.kdc.Krb5Conf }, []string{"hms_auth.keytab", "krb5.conf"}},
		"no client principal":    {func(c *hms.KerberosConfig) { c.ClientPrincipal = "" }, []string{"hms_auth.client_principal"}},
		"bad service principal":  {func(c *hms.KerberosConfig) { c.ServicePrincipal = "hive@" + k.kdc.Realm }, []string{"hms_auth.service_principal", "service/host@REALM"}},
		"krb5.conf missing":      {func(c *hms.KerberosConfig) { c.Krb5Conf = "/nonexistent/krb5.conf" }, []string{"hms_auth.krb5_conf"}},
		"no keytab and no cache": {func(c *hms.KerberosConfig) { c.Keytab, c.CCache = "", "" }, []string{"KRB5CCNAME", "hms_auth.keytab"}},
	} {
		cfg := k.config()
		tc.edit(cfg)
		_, err := hms.NewClient(hms.ClientConfig{URIs: []string{"thrift://localhost:9083"}, Kerberos: cfg})
		if !hms.IsConfigError(err) {
			t.Errorf("%s: got %v, want a configuration error", name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\ndoes not mention %q", name, err, w)
			}
		}
	}
}

// Mistakes only the KDC or the metastore can reveal are configuration errors
// that say what to fix; a KDC that is down is not, and once it is back the
// same client connects.
func TestKerberosRefusals(t *testing.T) {
	k := newKerberized(t, kdctest.Options{})
	_, uri := k.metastore(t, "localhost", sasltest.Acceptor{})
	call := func(cfg *hms.KerberosConfig, uri string) error {
		c := newClient(t, hms.ClientConfig{URIs: []string{uri}, Kerberos: cfg, DialTimeout: 3 * time.Second})
		_, err := c.CurrentEventID(ctxT(t))
		return err
	}
	expectConfig := func(name string, err error, want ...string) {
		t.Helper()
		t.Logf("%s: %v", name, err)
		if !hms.IsConfigError(err) {
			t.Errorf("%s: got %v, want a configuration error", name, err)
			return
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\ndoes not mention %q", name, err, w)
			}
		}
	}

	// Another principal's keytab: found at the first login, not at start-up,
	// so that the sidecar stays up (not ready) and a replaced keytab is read.
	k.kdc.AddPrincipal(t, "other")
	other := k.config()
	other.Keytab = k.kdc.Keytab(t, "other")
	expectConfig("another principal's keytab", call(other, uri), "hms_auth.keytab", "no key for sync@", "other@")

	cfg := k.config()
	cfg.ServicePrincipal = "nosuch/_HOST@" + k.kdc.Realm
	expectConfig("unknown service principal", call(cfg, uri), "nosuch/localhost", "hms_auth.service_principal")

	k.kdc.AddPrincipal(t, "ghost")
	ghost := k.config()
	ghost.ClientPrincipal, ghost.Keytab = "ghost@"+k.kdc.Realm, k.kdc.Keytab(t, "ghost")
	k.kdc.DeletePrincipal(t, "ghost")
	expectConfig("unknown client principal", call(ghost, uri), "ghost@", "hms_auth.client_principal")

	k.kdc.AddPrincipal(t, "stale")
	stale := k.config()
	stale.ClientPrincipal, stale.Keytab = "stale@"+k.kdc.Realm, k.kdc.Keytab(t, "stale")
	k.kdc.RotateKey(t, "stale")
	expectConfig("stale keytab", call(stale, uri), "hms_auth.keytab", "stale key version")

	// The metastore's keytab lacks its principal's current key.
	k.kdc.AddPrincipal(t, "hive/127.0.0.1")
	oldKT, err := keytab.Load(k.kdc.Keytab(t, "hive/127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	k.kdc.RotateKey(t, "hive/127.0.0.1")
	staleServer := hmstest.NewServer(hmstest.WithSASL(&sasltest.Acceptor{Keytab: oldKT}))
	defer staleServer.Close()
	expectConfig("metastore with a stale keytab", call(k.config(), staleServer.URI()), "refused", "hive.metastore.kerberos.keytab.file")

	// Unlike Hive, which closes the connection (a configuration error), the
	// fake's Thrift server waits for the rest of what it takes for a message.
	plain := hmstest.NewServer()
	defer plain.Close()
	if err := call(k.config(), plain.URI()); err == nil || !strings.Contains(err.Error(), "hive.metastore.sasl.enabled=true") {
		t.Errorf("metastore without SASL: got %v, want advice naming hive.metastore.sasl.enabled", err)
	}

	// Hive without SASL reads the START frame as a malformed message and closes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 5))
			c.Close()
		}
	}()
	expectConfig("metastore closing on START", call(k.config(), "thrift://"+ln.Addr().String()), "hive.metastore.sasl.enabled", "hms_auth.mechanism: none")

	k.kdc.Stop()
	c := newClient(t, hms.ClientConfig{URIs: []string{uri}, Kerberos: k.config(), DialTimeout: 3 * time.Second})
	_, err = c.CurrentEventID(ctxT(t))
	if err == nil || hms.IsConfigError(err) || !strings.Contains(err.Error(), "KDC is unreachable") {
		t.Errorf("KDC down: got %v, want a transient error saying the KDC is unreachable", err)
	}
	if err := k.kdc.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Errorf("after the KDC came back: %v", err)
	}
}

// A plain client that reaches a metastore requiring SASL is told which
// setting it meets (no KDC needed: the metastore refuses the first bytes).
func TestPlainClientAgainstSASLMetastore(t *testing.T) {
	s := hmstest.NewServer(hmstest.WithSASL(&sasltest.Acceptor{Keytab: keytab.New()}))
	defer s.Close()
	// Hive 4.0 closes without a word; the client then asks it whether it speaks SASL.
	silent := hmstest.NewServer(hmstest.WithSASL(&sasltest.Acceptor{Keytab: keytab.New(), CloseOnInvalid: true}))
	defer silent.Close()
	for name, cfg := range map[string]hms.ClientConfig{
		"first call":            {URIs: []string{s.URI()}},
		"with set_ugi":          {URIs: []string{s.URI()}, UGIUser: "hmssync"},
		"closing, first call":   {URIs: []string{silent.URI()}},
		"closing, with set_ugi": {URIs: []string{silent.URI()}, UGIUser: "hmssync"},
	} {
		c := newClient(t, cfg)
		_, err := c.CurrentEventID(ctxT(t))
		if !hms.IsConfigError(err) || !strings.Contains(err.Error(), "hive.metastore.sasl.enabled") || !strings.Contains(err.Error(), "hms_auth.mechanism") {
			t.Errorf("%s: got %v, want a configuration error naming hive.metastore.sasl.enabled and hms_auth.mechanism", name, err)
		}
	}
	// A plain metastore that closes the first call is not taken for a SASL one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c := newClient(t, hms.ClientConfig{URIs: []string{"thrift://" + ln.Addr().String()}})
	if _, err := c.CurrentEventID(ctxT(t)); err == nil || hms.IsConfigError(err) || strings.Contains(err.Error(), "sasl") {
		t.Errorf("closing plain server: got %v, want a transport error that does not blame SASL", err)
	}
}

// Tickets shorter than the test: the client keeps connecting as its
// ticket-granting ticket expires, obtaining new ones from the keytab.
func TestKerberosOutlivesItsTickets(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out two ticket lifetimes")
	}
	const life = 6 * time.Second
	k := newKerberized(t, kdctest.Options{MaxLife: life, MaxRenewableLife: life})
	s, uri := k.metastore(t, "localhost", sasltest.Acceptor{Subkey: true})
	c := newClient(t, hms.ClientConfig{URIs: []string{uri}, Kerberos: k.config()})
	deadline := time.Now().Add(2*life + 2*time.Second)
	n := 0
	for time.Now().Before(deadline) {
		s.DropConnections() // every call authenticates anew
		if _, err := c.CurrentEventID(ctxT(t)); err != nil {
			t.Fatalf("call %d, %s into the test: %v", n, time.Until(deadline), err)
		}
		n++
		time.Sleep(500 * time.Millisecond) // pacing the calls over the lifetimes, not synchronising
	}
	if got := len(s.SASLClients()); got != n {
		t.Errorf("metastore authenticated %d connections, want %d", got, n)
	}
}

// Bare metal: no keytab, the ticket cache an external kinit keeps fresh. The
// cache's principal is used when none is configured, a cache of another
// principal is refused naming both, and a cache rewritten by kinit is read
// again.
func TestKerberosTicketCache(t *testing.T) {
	k := newKerberized(t, kdctest.Options{})
	s, uri := k.metastore(t, "localhost", sasltest.Acceptor{Subkey: true})
	cache := k.kdc.Kinit(t, "sync", k.clientKT)
	cfg := k.config()
	cfg.Keytab, cfg.ClientPrincipal, cfg.CCache = "", "", cache
	c := newClient(t, hms.ClientConfig{URIs: []string{uri}, Kerberos: cfg})
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Fatalf("with the ticket cache: %v", err)
	}
	if got := s.SASLClients(); len(got) != 1 || got[0] != "sync@"+kdctest.Realm {
		t.Errorf("metastore authenticated %q, want sync@%s from the cache", got, kdctest.Realm)
	}

	k.kdc.AddPrincipal(t, "other")
	k.kdc.KinitInto(t, cache, "other", k.kdc.Keytab(t, "other"))
	cfg2 := *cfg
	cfg2.ClientPrincipal = "sync@" + kdctest.Realm
	c2 := newClient(t, hms.ClientConfig{URIs: []string{uri}, Kerberos: &cfg2})
	_, err := c2.CurrentEventID(ctxT(t))
	if !hms.IsConfigError(err) || !strings.Contains(err.Error(), "other@") || !strings.Contains(err.Error(), "kinit as sync@") {
		t.Errorf("cache of another principal: got %v, want a configuration error naming both", err)
	}

	// The first client reads the rewritten cache at its next connection.
	s.DropConnections()
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Fatalf("after kinit rewrote the cache: %v", err)
	}
	if got := s.SASLClients(); len(got) != 2 || got[1] != "other@"+kdctest.Realm {
		t.Errorf("metastore authenticated %q, want other@%s second: the rewritten cache", got, kdctest.Realm)
	}
}

// A KDC whose clock is two hours off (its host's NTP failed, or ours did):
// the login fails with an error that names clock skew and says to synchronise
// the clocks, whether the client notices the skew in the KDC's reply (no
// pre-authentication) or the KDC refuses the client's timestamp (with it).
// Once the clocks agree again the same client logs in.
func TestKerberosClockSkew(t *testing.T) {
	k := newKerberized(t, kdctest.Options{ClockOffset: 2 * time.Hour})
	_, uri := k.metastore(t, "localhost", sasltest.Acceptor{})
	k.kdc.AddPrincipal(t, "preauth")
	preauth := k.config()
	preauth.ClientPrincipal, preauth.Keytab = "preauth@"+k.kdc.Realm, k.kdc.Keytab(t, "preauth")
	k.kdc.RequirePreauth(t, "preauth")
	clients := map[string]*hms.Client{}
	for name, cfg := range map[string]*hms.KerberosConfig{"no pre-authentication": k.config(), "pre-authentication": preauth} {
		c := newClient(t, hms.ClientConfig{URIs: []string{uri}, Kerberos: cfg, DialTimeout: 3 * time.Second})
		clients[name] = c
		_, err := c.CurrentEventID(ctxT(t))
		t.Logf("%s: %v", name, err)
		// A configuration error, so that /readyz fails: retrying cannot help
		// until someone fixes a clock, and an operator should be told now
		// rather than find a sidecar retrying quietly for ever. The sidecar
		// still retries (slowly), so it recovers by itself once NTP catches up.
		if !hms.IsConfigError(err) {
			t.Errorf("%s: got %v, want a configuration error", name, err)
			continue
		}
		for _, w := range []string{"clock", "synchronise", "NTP"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\ndoes not mention %q", name, err, w)
			}
		}
	}
	k.kdc.Stop()
	k.kdc.SetClockOffset(0)
	if err := k.kdc.Resume(); err != nil {
		t.Fatal(err)
	}
	for name, c := range clients {
		if _, err := c.CurrentEventID(ctxT(t)); err != nil {
			t.Errorf("%s, after the clocks were synchronised: %v", name, err)
		}
	}
}

// A connection that breaks during the SASL negotiation (a metastore
// restarting, a load balancer cutting) while the KDC is down must not throw
// away the login: its cached tickets are what lets the client reconnect
// until the KDC is back.
func TestKerberosKeepsTicketsAcrossBrokenNegotiation(t *testing.T) {
	k := newKerberized(t, kdctest.Options{})
	good, goodURI := k.metastore(t, "localhost", sasltest.Acceptor{Subkey: true})
	// The other metastore of hms_uris reads the START frame and hangs up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Read(make([]byte, 64))
			c.Close()
		}
	}()
	c := newClient(t, hms.ClientConfig{URIs: []string{goodURI, "thrift://" + ln.Addr().String()}, Kerberos: k.config(), DialTimeout: 3 * time.Second})
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Fatalf("with the KDC up: %v", err)
	}

	k.kdc.Stop()
	good.Down()
	// The good metastore is down, so the client tries the other, whose
	// negotiation breaks.
	if _, err := c.CurrentEventID(ctxT(t)); err == nil {
		t.Fatal("CurrentEventID succeeded with the only SASL metastore down")
	}
	if err := good.Up(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Errorf("with the metastore back and the KDC still down: %v; want a reconnection with the cached ticket", err)
	}
	if got := len(good.SASLClients()); got != 2 {
		t.Errorf("metastore authenticated %d connections, want 2", got)
	}
}
