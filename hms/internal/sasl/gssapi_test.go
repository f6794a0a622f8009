package sasl

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/hmssync/hmssync/hms/sasltest"
	"github.com/hmssync/hmssync/internal/testutil/kdctest"
)

// realm is a KDC with a client and a service principal and their keytabs.
type realm struct {
	kdc        *kdctest.KDC
	conf       *config.Config
	clientKT   *keytab.Keytab
	serviceKT  *keytab.Keytab
	clientName string
}

func newRealm(t *testing.T) *realm {
	t.Helper()
	kdc := kdctest.Start(t, kdctest.Options{})
	kdc.AddPrincipal(t, "sync")
	kdc.AddPrincipal(t, "hive/localhost")
	conf, err := config.Load(kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	load := func(p string) *keytab.Keytab {
		kt, err := keytab.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return kt
	}
	return &realm{kdc: kdc, conf: conf, clientKT: load(kdc.Keytab(t, "sync")), serviceKT: load(kdc.Keytab(t, "hive/localhost")), clientName: "sync"}
}

func (r *realm) login(t *testing.T) *client.Client {
	t.Helper()
	cl := client.NewWithKeytab(r.clientName, r.kdc.Realm, r.clientKT, r.conf, client.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		t.Fatalf("login: %v", err)
	}
	t.Cleanup(cl.Destroy)
	return cl
}

// handshake negotiates over loopback TCP with acc as the server, exchanges
// one data frame each way when the negotiation succeeds, and returns the
// server's context and the client's error.
func handshake(t *testing.T, cl *client.Client, acc *sasltest.Acceptor) (*sasltest.Context, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ctx  *sasltest.Context
		err  error
		data string
	}
	res := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			res <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		ctx, err := acc.Negotiate(c)
		if err != nil {
			res <- result{err: err}
			return
		}
		tr := ctx.Transport(c)
		b := make([]byte, 4)
		_, err = io.ReadFull(tr, b)
		if err == nil {
			tr.Write([]byte("pong"))
			err = tr.Flush(context.Background())
		}
		res <- result{ctx: ctx, err: err, data: string(b)}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	mech, err := NewGSSAPI(cl, "hive/localhost@"+kdctest.Realm)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTransport(c, Limits{})
	cerr := tr.Negotiate(mech)
	if cerr == nil {
		tr.Write([]byte("ping"))
		if err := tr.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(tr, b); err != nil || string(b) != "pong" {
			t.Errorf("client read %q, %v; want pong", b, err)
		}
	} else {
		c.Close()
	}
	r := <-res
	if cerr == nil {
		if r.err != nil {
			t.Fatalf("server: %v", r.err)
		}
		if r.data != "ping" {
			t.Errorf("server read %q, want ping", r.data)
		}
	}
	return r.ctx, cerr
}

func TestGSSAPIAgainstRealKDC(t *testing.T) {
	r := newRealm(t)
	cl := r.login(t)
	cases := []struct {
		name      string
		acc       sasltest.Acceptor
		wantLayer byte
	}{
		{"auth with the session key", sasltest.Acceptor{}, sasltest.LayerNone},
		{"auth with an acceptor subkey", sasltest.Acceptor{Subkey: true}, sasltest.LayerNone},
		{"auth-int with an acceptor subkey", sasltest.Acceptor{Subkey: true, Layers: sasltest.LayerIntegrity, MaxSize: 1 << 16}, sasltest.LayerIntegrity},
		{"auth-int with the session key", sasltest.Acceptor{Layers: sasltest.LayerIntegrity | sasltest.LayerPrivacy}, sasltest.LayerIntegrity},
		{"auth preferred when offered with others", sasltest.Acceptor{Layers: 7}, sasltest.LayerNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			acc := tc.acc
			acc.Keytab = r.serviceKT
			ctx, err := handshake(t, cl, &acc)
			if err != nil {
				t.Fatalf("client: %v", err)
			}
			if ctx.Client != "sync@"+kdctest.Realm {
				t.Errorf("server authenticated %q, want sync@%s", ctx.Client, kdctest.Realm)
			}
			if ctx.Layer != tc.wantLayer || ctx.Subkey != acc.Subkey {
				t.Errorf("layer %d subkey %v, want layer %d subkey %v", ctx.Layer, ctx.Subkey, tc.wantLayer, acc.Subkey)
			}
		})
	}
}

func TestGSSAPIRefusesPrivacyNamingHadoopRPCProtection(t *testing.T) {
	r := newRealm(t)
	cl := r.login(t)
	for name, acc := range map[string]sasltest.Acceptor{
		"only auth-conf offered": {Layers: sasltest.LayerPrivacy},
		"sealed offer":           {SealOffer: true},
	} {
		acc.Keytab = r.serviceKT
		_, err := handshake(t, cl, &acc)
		if err == nil || !strings.Contains(err.Error(), "hadoop.rpc.protection") {
			t.Errorf("%s: got %v, want an error naming hadoop.rpc.protection", name, err)
		}
	}
}

func TestGSSAPIServerWithoutTheServiceKey(t *testing.T) {
	r := newRealm(t)
	cl := r.login(t)
	r.kdc.AddPrincipal(t, "other/localhost")
	other, err := keytab.Load(r.kdc.Keytab(t, "other/localhost"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = handshake(t, cl, &sasltest.Acceptor{Keytab: other})
	var se *ServerError
	if !errors.As(err, &se) || se.Status != "BAD" || !strings.Contains(se.Message, "GSS initiate failed") {
		t.Errorf("got %v, want the server's BAD frame saying GSS initiate failed", err)
	}
}

func TestGSSAPIUnknownServicePrincipal(t *testing.T) {
	r := newRealm(t)
	cl := r.login(t)
	mech, err := NewGSSAPI(cl, "nosuch/localhost@"+kdctest.Realm)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mech.Start()
	var te *TicketError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "nosuch/localhost") || !strings.Contains(err.Error(), "PRINCIPAL_UNKNOWN") {
		t.Errorf("got %v, want a TicketError naming the principal and KDC_ERR_S_PRINCIPAL_UNKNOWN", err)
	}
}

func TestNewGSSAPIChecksThePrincipal(t *testing.T) {
	conf, err := config.NewFromString("[libdefaults]\n default_realm = A.TEST\n[domain_realm]\n h.example = B.TEST\n")
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewWithPassword("u", "A.TEST", "p", conf)
	for _, p := range []string{"hive", "hive/", "/host", "hive/a/b@A.TEST"} {
		if _, err := NewGSSAPI(cl, p); err == nil || !strings.Contains(err.Error(), "service/host@REALM") {
			t.Errorf("%q: got %v, want the form service/host@REALM", p, err)
		}
	}
	if _, err := NewGSSAPI(cl, "hive/h.example@A.TEST"); err == nil || !strings.Contains(err.Error(), "[domain_realm]") {
		t.Errorf("realm not the host's: got %v, want advice on [domain_realm]", err)
	}
	if _, err := NewGSSAPI(cl, "hive/h.example@B.TEST"); err != nil {
		t.Errorf("realm of the host: %v", err)
	}
}
