package cursorstore_test

import (
	"context"
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

func TestCommitMasterOutcomes(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	key := s.MasterCursorKey("hive")
	tok := leaderToken(t, srv.Client, s, "a")

	// First commit onto an absent key.
	c0, err := s.MasterCursor(ctx, "hive")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c0, Value: 100})
	if err != nil {
		t.Fatalf("first commit: %v", err)
	}
	v, rev, _ := raw(t, srv.Client, key)
	if v != "100" || c1.Value != 100 || c1.Rev != rev {
		t.Fatalf("after commit: etcd %q@%d, returned %+v", v, rev, c1)
	}

	// Stale lastSeen: conflict, and the current cursor comes back.
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c0, Value: 150}); !errors.Is(err, cursorstore.ErrConflict) {
		t.Fatalf("commit with stale lastSeen: %v; want ErrConflict", err)
	}
	cur, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: cursorstore.Cursor{Value: 90, Exists: true, Rev: c1.Rev - 1}, Value: 150})
	if !errors.Is(err, cursorstore.ErrConflict) || cur.Value != 100 || cur.Rev != c1.Rev {
		t.Fatalf("conflict returned %+v, %v; want current 100@%d", cur, err, c1.Rev)
	}

	// Backwards: refused before anything is sent.
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c1, Value: 99}); !errors.Is(err, cursorstore.ErrBackwards) {
		t.Fatalf("backwards commit: %v; want ErrBackwards", err)
	}
	if v, r, _ := raw(t, srv.Client, key); v != "100" || r != c1.Rev {
		t.Fatalf("backwards commit wrote %q@%d", v, r)
	}
	// Equal is not backwards.
	c2, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c1, Value: 100})
	if err != nil {
		t.Fatalf("commit of the same value: %v", err)
	}

	// RewindMaster (HMS log reset) may lower it, still fenced.
	c3, err := s.RewindMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c2, Value: 3})
	if err != nil || c3.Value != 3 {
		t.Fatalf("rewind: %+v %v", c3, err)
	}

	// The leader key replaced (new create revision): not leader, even with a
	// current lastSeen.
	if _, err := srv.Client.Delete(ctx, tok.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c3, Value: 4}); !errors.Is(err, cursorstore.ErrNotLeader) {
		t.Fatalf("commit after leader key deletion: %v; want ErrNotLeader", err)
	}
	if _, err := srv.Client.Put(ctx, tok.Key, "a", clientv3.WithLease(tok.Lease)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c3, Value: 4}); !errors.Is(err, cursorstore.ErrNotLeader) {
		t.Fatalf("commit with a recreated leader key: %v; want ErrNotLeader", err)
	}
	// Both stale: not leader wins, so the caller steps down instead of retrying.
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c0, Value: 4}); !errors.Is(err, cursorstore.ErrNotLeader) {
		t.Fatalf("commit with stale token and stale lastSeen: %v; want ErrNotLeader", err)
	}
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: election.Token{}, Base: c3, Value: 4}); !errors.Is(err, cursorstore.ErrNotLeader) {
		t.Fatalf("commit without token: %v; want ErrNotLeader", err)
	}
	if v, r, _ := raw(t, srv.Client, key); v != "3" || r != c3.Rev {
		t.Fatalf("rejected commits changed the cursor to %q@%d", v, r)
	}
}

func TestCommitMasterDoesNotOverwriteABadValue(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	tok := leaderToken(t, srv.Client, s, "a")
	if _, err := srv.Client.Put(ctx, s.MasterCursorKey("hive"), "abc"); err != nil {
		t.Fatal(err)
	}
	seen, err := s.MasterCursor(ctx, "hive")
	var bve *cursorstore.BadValueError
	if !errors.As(err, &bve) {
		t.Fatalf("MasterCursor: %v", err)
	}
	// A careless caller passes the returned cursor on anyway.
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: seen, Value: 10}); !errors.As(err, &bve) {
		t.Fatalf("commit over abc: %v; want a BadValueError", err)
	}
	if v, _, _ := raw(t, srv.Client, s.MasterCursorKey("hive")); v != "abc" {
		t.Fatalf("abc was overwritten with %q", v)
	}
}
