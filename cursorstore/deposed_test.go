package cursorstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil/etcdpartition"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// runElector runs an elector until the test ends, or until stop (which waits
// for Run to return; calling it again does nothing).
func runElector(t *testing.T, cfg election.Config) (el *election.Elector, stop func()) {
	t.Helper()
	el, err := election.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := el.Run(ctx); err != nil {
			t.Errorf("Run(%s): %v", cfg.Name, err)
		}
	}()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return el, stop
}

// A master cut off from etcd until its lease expires is replaced; when its
// connection comes back, its commits with the old token fail with ErrNotLeader,
// and even the commit it sent while cut off (outcome unknown, delivered late)
// does not overwrite the new master's cursor.
func TestDeposedMasterIsFenced(t *testing.T) {
	srv := etcdtest.New(t)
	link := etcdpartition.New(t, srv.Endpoints()[0])
	aCli := link.Client(t)
	aStore := newStore(t, aCli)
	bStore := newStore(t, srv.Client)
	ctx := context.Background()
	cfg := func(name string) election.Config {
		return election.Config{Prefix: aStore.ElectionPrefix(), Name: name, LeaseTTL: 3 * time.Second,
			RequestTimeout: 900 * time.Millisecond, Logger: zaptest.NewLogger(t).Named(name)}
	}
	ac := cfg("a")
	ac.Client = aCli
	a, _ := runElector(t, ac)
	eventually(t, 10*time.Second, "a master", a.IsMaster)
	bc := cfg("b")
	bc.Client = srv.NewClient(t)
	b, _ := runElector(t, bc)
	eventually(t, 10*time.Second, "b follows a", func() bool { return b.Leader() == "a" })

	aTerm, _ := a.Current()
	seen, err := aStore.CommitMaster(ctx, "hive", cursorstore.Commit{Token: aTerm.Token, Base: cursorstore.Cursor{}, Value: 10})
	if err != nil {
		t.Fatalf("a's commit while master: %v", err)
	}

	link.Cut()
	// While cut off, a's commit has an unknown outcome (it is held in flight).
	if _, err := aStore.CommitMaster(ctx, "hive", cursorstore.Commit{Token: aTerm.Token, Base: seen, Value: 20}); !errors.Is(err, cursorstore.ErrOutcomeUnknown) {
		t.Fatalf("commit while cut off: %v; want ErrOutcomeUnknown", err)
	}
	eventually(t, 15*time.Second, "b master after a's lease expired", b.IsMaster)
	bTerm, _ := b.Current()
	bSeen, err := bStore.MasterCursor(ctx, "hive")
	if err != nil {
		t.Fatal(err)
	}
	bCommitted, err := bStore.CommitMaster(ctx, "hive", cursorstore.Commit{Token: bTerm.Token, Base: bSeen, Value: 15})
	if err != nil {
		t.Fatalf("new master's commit: %v", err)
	}

	link.Heal()
	// Whatever a still believes, its token is dead. Retry until the link carries
	// requests again: outcome-unknown while the connection recovers is fine.
	eventually(t, 15*time.Second, "a's commit answered with ErrNotLeader", func() bool {
		_, err := aStore.CommitMaster(ctx, "hive", cursorstore.Commit{Token: aTerm.Token, Base: seen, Value: 30})
		if err != nil && !errors.Is(err, cursorstore.ErrNotLeader) && !errors.Is(err, cursorstore.ErrOutcomeUnknown) {
			t.Fatalf("a's commit after heal: %v; want ErrNotLeader", err)
		}
		return errors.Is(err, cursorstore.ErrNotLeader)
	})
	// Even with a fresh lastSeen the old token is refused.
	cur, err := aStore.MasterCursor(ctx, "hive")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aStore.CommitMaster(ctx, "hive", cursorstore.Commit{Token: aTerm.Token, Base: cur, Value: 40}); !errors.Is(err, cursorstore.ErrNotLeader) {
		t.Fatalf("a's commit with a current lastSeen: %v; want ErrNotLeader", err)
	}
	if cur.Value != 15 || cur.Rev != bCommitted.Rev {
		t.Fatalf("cursor is %+v; want b's 15@%d untouched by the deposed master", cur, bCommitted.Rev)
	}
	select {
	case <-aTerm.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("a's term still open 10s after its lease expired")
	}
}
