package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/sasltest"
	"github.com/hmssync/hmssync/internal/testutil/kdctest"
)

// kerberizedHarness is the harness with a real KDC: its metastore requires
// SASL GSSAPI with the keys of hive/127.0.0.1 and every member logs in as
// sync from a keytab.
func kerberizedHarness(t *testing.T) (*harness, *kdctest.KDC) {
	t.Helper()
	kdc := kdctest.Start(t, kdctest.Options{})
	kdc.AddPrincipal(t, "sync")
	kdc.AddPrincipal(t, "hive/127.0.0.1")
	kt, err := keytab.Load(kdc.Keytab(t, "hive/127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	krb := &hms.KerberosConfig{
		ServicePrincipal: "hive/_HOST@" + kdc.Realm,
		ClientPrincipal:  kdc.Principal("sync"),
		Keytab:           kdc.Keytab(t, "sync"),
		Krb5Conf:         kdc.Krb5Conf,
	}
	h := newHarness(t, harnessOpts{hms: []hmstest.Option{hmstest.WithSASL(&sasltest.Acceptor{Keytab: kt, Subkey: true})}, kerberos: krb})
	return h, kdc
}

// The KDC stopped while the sidecars sync over Kerberos. A sidecar that has
// logged in holds its ticket-granting and service tickets (hours of life), so
// it needs the KDC only for a new login: events written meanwhile keep
// arriving, across reconnections (each a new SASL negotiation, with the cached
// service ticket) and across a failover to a member already logged in. A
// member that must log in while the KDC is down fails transiently, retrying
// in place with its cursor kept. When the KDC is back everything converges,
// and no FE needed a full refresh.
func TestKDCDownWhileSyncing(t *testing.T) {
	// Not parallel: the KDC stops and resumes on the same port (one
	// found free, then bound by krb5kdc), which a test running beside it could
	// be given meanwhile.
	h, kdc := kerberizedHarness(t)
	m := h.startConverged()
	base := h.allFullRefreshes()
	// The initial full refreshes read no events: a few more make every
	// member fetch from the metastore, and so log in, before the KDC stops.
	h.churn(5)
	h.awaitConverged(converge)
	if h.hms.SASLFailures() != 0 || len(h.hms.SASLClients()) < 3 {
		t.Fatalf("before the KDC stopped: %d SASL failures, clients %q; want every member authenticated", h.hms.SASLFailures(), h.hms.SASLClients())
	}

	kdc.Stop()
	// Reconnections while the KDC is down: every member's connection is cut
	// while events keep being written (the fake metastore needs no Kerberos
	// to be written to).
	authed := len(h.hms.SASLClients())
	for range 3 {
		h.hms.DropConnections()
		h.churn(10)
		h.awaitConverged(converge)
	}
	if got := len(h.hms.SASLClients()); got < authed+3 {
		t.Errorf("%d SASL negotiations while the KDC was down, want at least 3 (one per dropped master connection): "+
			"the test did not exercise reconnecting with cached tickets", got-authed)
	}

	// A failover while the KDC is down: the new master is logged in already.
	m.crash()
	if m2 := h.master(10 * time.Second); m2 == m {
		t.Fatal("the crashed member is still master")
	}
	var up []int // the FEs of running members
	for _, x := range h.running() {
		up = append(up, x.i)
	}
	h.churn(10)
	h.awaitConverged(converge, up...)

	if n := h.hms.SASLFailures(); n != 0 {
		t.Errorf("%d SASL negotiations failed at the metastore while the KDC was down; want none: every reconnection has a cached ticket", n)
	}

	// The crashed member comes back with no tickets: it cannot log in.
	r := h.start(m.i, memberOpts{})
	transient := func() float64 { return r.metric("hmssync_retries_total", `class="transient"`) }
	await(t, 10*time.Second, "the restarted member retrying its login in place", func() (bool, string) {
		st := r.catalogStatus()
		return transient() >= 3 && strings.Contains(st.LastError, "KDC is unreachable"),
			fmt.Sprintf("transient retries %v, last error %q", transient(), st.LastError)
	})
	if v := r.metric("hmssync_retries_total", `class="hms_config"`); v != 0 {
		t.Errorf("a KDC that is down was counted as a configuration failure (%v retries): it is transient", v)
	}
	held := r.catalogStatus().Cursor
	h.churn(10)
	h.awaitConverged(converge, up...) // the others still sync
	await(t, 5*time.Second, "more failed logins of the restarted member", func() (bool, string) {
		return transient() >= 6, fmt.Sprintf("transient retries %v", transient())
	})
	if c := r.catalogStatus().Cursor; c != held {
		t.Errorf("restarted member's cursor moved from %d to %d without a login", held, c)
	}

	if err := kdc.Resume(); err != nil {
		t.Fatal(err)
	}
	h.awaitConverged(converge)
	h.checkCommitsMonotonic(0)
	h.expectFullRefreshesSince(base, 0, "after the KDC came back")
}
