package cursorstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdpartition"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// A watch whose link to etcd is cut (the gRPC stream stays open and silent, as
// in a network partition) stops being fresh, names its key, is re-established,
// and is fresh again by itself once the link heals, without losing the change
// made meanwhile. A quiet but connected watch stays fresh.
func TestWatchFreshnessFollowsTheLinkToEtcd(t *testing.T) {
	srv := etcdtest.New(t)
	link := etcdpartition.New(t, srv.Endpoints()[0])
	const timeout = 300 * time.Millisecond
	s := cursorstore.New(link.Client(t), "/hmssync", cluster, timeout, zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := s.MasterCursorKey("hive")

	w := s.WatchMaster(ctx, "hive")
	if c := next(t, w.C, 10*time.Second); c.Exists {
		t.Fatalf("first value %+v; want absent", c)
	}
	eventually(t, 10*time.Second, "a fresh watch", func() bool { return w.Fresh() == nil })

	// Nothing changes for ten request timeouts (more than three freshness
	// bounds): the watch must stay fresh and must not restart.
	restarts := s.WatchRestarts()
	for deadline := time.Now().Add(10 * timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := w.Fresh(); err != nil {
			t.Fatalf("a connected watch of a quiet key went stale: %v", err)
		}
	}
	if got := s.WatchRestarts(); got != restarts {
		t.Fatalf("a connected watch of a quiet key restarted %d times", got-restarts)
	}

	link.Cut()
	eventually(t, 10*time.Second, "the watch not fresh while cut off", func() bool { return w.Fresh() != nil })
	if err := w.Fresh(); !strings.Contains(err.Error(), key) {
		t.Errorf("Fresh() = %q; want it to name the key %s", err, key)
	}
	resp, err := srv.Client.Put(context.Background(), key, "7")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the silent watch restarted", func() bool { return s.WatchRestarts() > restarts })

	link.Heal()
	eventually(t, 15*time.Second, "the watch fresh again after the link healed", func() bool { return w.Fresh() == nil })
	if c := next(t, w.C, 10*time.Second); c.Value != 7 || c.Rev != resp.Header.Revision {
		t.Fatalf("after the heal got %+v; want 7@%d (the commit made while cut off)", c, resp.Header.Revision)
	}
}

// A watch that cannot start (an invalid catalog name) is never fresh and says why.
func TestWatchOfAnInvalidNameIsNotFresh(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	w := s.WatchMaster(context.Background(), "no/slashes")
	if _, ok := <-w.C; ok {
		t.Fatal("the watch of an invalid catalog delivered a value")
	}
	err := w.Fresh()
	if err == nil || !strings.Contains(err.Error(), "no/slashes") {
		t.Fatalf("Fresh() = %v; want an error naming the catalog no/slashes", err)
	}
}
