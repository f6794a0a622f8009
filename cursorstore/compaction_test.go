package cursorstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// A watch whose resume revision has been compacted away gets ErrCompacted; the
// store must read the key again and go on watching, losing no value.
func TestWatchRecoversFromCompaction(t *testing.T) {
	srv := etcdtest.New(t)
	s := New(srv.Client, "/hmssync", "c1", 2*time.Second, zaptest.NewLogger(t))
	key := s.MasterCursorKey("hive")

	// Between the watch's first read and its Watch call, move the cursor on and
	// compact past the revision the watch will resume from.
	var compactedAt int64
	s.beforeWatch = func(k string, readRev int64) {
		if compactedAt != 0 || k != s.keys.masterDir("hive") {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var rev int64
		for v := 7; v <= 9; v++ {
			resp, err := srv.Client.Put(ctx, key, strconv.Itoa(v))
			if err != nil {
				t.Errorf("put: %v", err)
				return
			}
			rev = resp.Header.Revision
		}
		if _, err := srv.Client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
			t.Errorf("compact: %v", err)
			return
		}
		compactedAt = rev
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := s.WatchMaster(ctx, "hive").C
	recv := func() Cursor {
		t.Helper()
		select {
		case c := <-ch:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no cursor within 10s")
		}
		panic("unreachable")
	}
	if c := recv(); c.Exists {
		t.Fatalf("first value %+v; want absent", c)
	}
	if c := recv(); c.Value != 9 || c.Rev != compactedAt {
		t.Fatalf("after the compaction got %+v; want 9@%d", c, compactedAt)
	}
	if s.WatchRestarts() != 1 {
		t.Fatalf("watch restarts = %d; want 1 (the compacted watch)", s.WatchRestarts())
	}
	resp, err := srv.Client.Put(context.Background(), key, "10")
	if err != nil {
		t.Fatal(err)
	}
	if c := recv(); c.Value != 10 || c.Rev != resp.Header.Revision {
		t.Fatalf("after recovery got %+v; want 10@%d", c, resp.Header.Revision)
	}
}
