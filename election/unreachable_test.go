package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil/etcdpartition"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// returnsWithin fails the test if done is not closed within d.
func returnsWithin(t *testing.T, d time.Duration, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s while etcd was unreachable", what, d)
	}
}

func TestCampaignResignAndRunReturnWhileEtcdIsUnreachable(t *testing.T) {
	srv := etcdtest.New(t)
	short := func(c *election.Config) { c.LeaseTTL = 3 * time.Second; c.RequestTimeout = 900 * time.Millisecond }
	linkA := etcdpartition.New(t, srv.Endpoints()[0])
	linkC := etcdpartition.New(t, srv.Endpoints()[0])

	a := start(t, linkA.Client(t), "a", short)
	eventually(t, 10*time.Second, "a master", a.el.IsMaster)
	b := start(t, srv.NewClient(t), "b", short)
	c := start(t, linkC.Client(t), "c", short)
	eventually(t, 10*time.Second, "b and c waiting", func() bool {
		cs := candidates(t, srv.Client)
		return cs["b"] && cs["c"] && b.el.Leader() == "a" && c.el.Leader() == "a"
	})

	// A campaign waiting behind others is abandoned at once when Run's context
	// ends, although etcd does not answer.
	linkC.Cut()
	c.cancel()
	returnsWithin(t, 5*time.Second, "Run of a waiting candidate", c.done)

	// Resign of a cut-off master ends the term at once and returns by itself
	// (the revoke is bounded by the request timeout) well before its deadline.
	aTerm, _ := a.el.Current()
	linkA.Cut()
	resigned := make(chan struct{})
	var resignErr error
	go func() {
		defer close(resigned)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		resignErr = a.el.Resign(ctx)
	}()
	returnsWithin(t, 5*time.Second, "Resign", resigned)
	if resignErr == nil {
		t.Fatal("Resign reported success although the lease could not be revoked")
	}
	select {
	case <-aTerm.Done:
	default:
		t.Fatal("Resign returned but the term is still open")
	}

	// The lease could not be revoked: b wins once it expires.
	eventually(t, 15*time.Second, "b takes over after a's lease expired", b.el.IsMaster)
	bTerm, _ := b.el.Current()
	if bTerm.Token.Rev <= aTerm.Token.Rev {
		t.Fatalf("b's epoch %d not above a's %d", bTerm.Token.Rev, aTerm.Token.Rev)
	}

	// a's Run, campaigning in vain meanwhile, ends promptly too.
	a.cancel()
	returnsWithin(t, 5*time.Second, "Run of a cut-off member", a.done)
}

func TestRunOfACutOffMasterReturns(t *testing.T) {
	srv := etcdtest.New(t)
	link := etcdpartition.New(t, srv.Endpoints()[0])
	a := start(t, link.Client(t), "a", func(c *election.Config) {
		c.LeaseTTL = 3 * time.Second
		c.RequestTimeout = 900 * time.Millisecond
	})
	eventually(t, 10*time.Second, "a master", a.el.IsMaster)
	term, _ := a.el.Current()
	link.Cut()
	a.cancel()
	returnsWithin(t, 5*time.Second, "Run of a cut-off master", a.done)
	select {
	case <-term.Done:
	default:
		t.Fatal("Run returned with the term still open")
	}
	if a.el.IsMaster() {
		t.Fatal("master after Run returned")
	}
}
