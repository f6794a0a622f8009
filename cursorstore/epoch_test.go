package cursorstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// The epoch key (SPEC §2a) is readable with etcdctl as a decimal, written in
// the commit's transaction, kept by a continuing commit and raised by one by a
// commit that starts a new lineage.
func TestCommitMasterKeepsAndRewindRaisesTheEpoch(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	tok := leaderToken(t, srv.Client, s, "a")
	epochKey := s.Root() + "/catalogs/hive/epoch"
	uuidKey := s.Root() + "/catalogs/hive/metastore"

	c0, err := s.MasterCursor(ctx, "hive")
	if err != nil || c0.Exists || c0.Epoch != 0 || c0.EpochRev != 0 {
		t.Fatalf("absent cursor = %+v, %v; want absent at epoch 0", c0, err)
	}
	c1, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c0, Value: 10, Metastore: "uuid-1"})
	if err != nil {
		t.Fatal(err)
	}
	v, rev, ok := raw(t, srv.Client, epochKey)
	if !ok || v != "0" || rev != c1.Rev {
		t.Fatalf("epoch key after the first commit = %q@%d (present %v); want \"0\" written with the cursor at %d", v, rev, ok, c1.Rev)
	}
	if u, _, _ := raw(t, srv.Client, uuidKey); u != "uuid-1" {
		t.Fatalf("metastore key = %q; want the uuid the master read", u)
	}
	c2, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c1, Value: 20, Metastore: "uuid-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, rev2, _ := raw(t, srv.Client, epochKey); rev2 != rev || c2.Epoch != 0 {
		t.Fatalf("a continuing commit rewrote the epoch key (rev %d -> %d) or changed it (%d)", rev, rev2, c2.Epoch)
	}
	read, err := s.MasterCursor(ctx, "hive")
	if err != nil || read != c2 {
		t.Fatalf("read back %+v, %v; want what the commit returned, %+v", read, err, c2)
	}

	// Another metastore behind the same URI cannot continue the lineage.
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c2, Value: 30, Metastore: "uuid-2"}); !errors.Is(err, cursorstore.ErrNewLineage) {
		t.Fatalf("commit with another metastore uuid: %v; want ErrNewLineage", err)
	}
	c3, err := s.RewindMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c2, Value: 3, Metastore: "uuid-2"})
	if err != nil {
		t.Fatal(err)
	}
	if c3.Epoch != 1 || c3.Value != 3 || c3.Metastore != "uuid-2" {
		t.Fatalf("rewind = %+v; want 3 at epoch 1 of uuid-2", c3)
	}
	if v, _, _ := raw(t, srv.Client, epochKey); v != "1" {
		t.Fatalf("epoch key after the rewind = %q; want 1", v)
	}
	// A master that still holds the old lineage's base cannot commit over it,
	// even with a higher value.
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c2, Value: 50}); !errors.Is(err, cursorstore.ErrConflict) {
		t.Fatalf("commit on the old lineage's base: %v; want ErrConflict", err)
	}
}

// A fenced commit compares the epoch key's revision: an epoch moved by someone
// else (an operator) between read and commit makes it fail, even though the
// cursor key itself is as last seen.
func TestCommitMasterFailsWhenOnlyTheEpochMoved(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	tok := leaderToken(t, srv.Client, s, "a")
	c1, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: cursorstore.Cursor{}, Value: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.Put(ctx, s.Root()+"/catalogs/hive/epoch", "7"); err != nil {
		t.Fatal(err)
	}
	cur, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c1, Value: 11})
	if !errors.Is(err, cursorstore.ErrConflict) || cur.Epoch != 7 {
		t.Fatalf("commit after the epoch moved = %+v, %v; want ErrConflict with the current epoch 7", cur, err)
	}
}

// An operator's reset and a lowered value start a new epoch; a raised value
// continues the lineage.
func TestOperatorSetRaisesTheEpochOnlyWhenItDoesNotContinue(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	tok := leaderToken(t, srv.Client, s, "a")
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: cursorstore.Cursor{}, Value: 100}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		value, wantEpoch int64
	}{
		{150, 0}, // raised: the members continue
		{120, 1}, // lowered: members beyond it must be told
		{-1, 2},  // reset
		{5, 2},   // raised from -1
	}
	for _, st := range steps {
		if _, err := s.SetMaster(ctx, "hive", st.value); err != nil {
			t.Fatal(err)
		}
		c, err := s.MasterCursor(ctx, "hive")
		if err != nil || c.Value != st.value || c.Epoch != st.wantEpoch {
			t.Fatalf("after cursor set %d: %+v, %v; want epoch %d", st.value, c, err, st.wantEpoch)
		}
	}
}

// A cluster written before epochs (no epoch keys) reads as epoch 0 everywhere,
// so upgraded members resume from their cursors; the first commit writes the key.
func TestClusterFromBeforeEpochsReadsAsEpochZero(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	if _, err := srv.Client.Put(ctx, s.MasterCursorKey("hive"), "40"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.Put(ctx, s.MemberCursorKey("fe-1", "hive"), "38"); err != nil {
		t.Fatal(err)
	}
	m, err := s.MasterCursor(ctx, "hive")
	if err != nil || m.Value != 40 || m.Epoch != 0 || m.EpochRev != 0 {
		t.Fatalf("old master cursor = %+v, %v", m, err)
	}
	own, err := s.MemberCursor(ctx, "fe-1", "hive")
	if err != nil || own.Value != 38 || own.Epoch != 0 {
		t.Fatalf("old member cursor = %+v, %v", own, err)
	}
	tok := leaderToken(t, srv.Client, s, "fe-1")
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: m, Value: 41}); err != nil {
		t.Fatalf("first commit after the upgrade: %v", err)
	}
	if v, _, ok := raw(t, srv.Client, s.Root()+"/catalogs/hive/epoch"); !ok || v != "0" {
		t.Fatalf("epoch key after the upgrade's first commit = %q (present %v); want 0", v, ok)
	}
}

func TestMemberCursorCarriesItsEpoch(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	if err := s.PutMemberCursor(ctx, "fe-1", "hive", 77, 3); err != nil {
		t.Fatal(err)
	}
	c, err := s.MemberCursor(ctx, "fe-1", "hive")
	if err != nil || c.Value != 77 || c.Epoch != 3 {
		t.Fatalf("member cursor = %+v, %v; want 77 at epoch 3", c, err)
	}
	if v, _, _ := raw(t, srv.Client, s.Root()+"/members/fe-1/epochs/hive"); v != "3" {
		t.Fatalf("member epoch key = %q; want the decimal 3", v)
	}
	if _, err := srv.Client.Put(ctx, s.Root()+"/members/fe-1/epochs/hive", "x"); err != nil {
		t.Fatal(err)
	}
	var bve *cursorstore.BadValueError
	if _, err := s.MemberCursor(ctx, "fe-1", "hive"); !errors.As(err, &bve) || !strings.Contains(err.Error(), "epochs/hive") {
		t.Fatalf("bad member epoch: %v; want a BadValueError naming the key", err)
	}
	st, err := s.Statuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) == 0 {
		t.Fatalf("status shows no problem for the bad epoch value: %+v", st)
	}
}

// The watch delivers a cursor and the epoch written in the same transaction as
// one value: a follower never sees the new lineage's cursor with the old epoch.
func TestWatchMasterDeliversCursorAndEpochTogether(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tok := leaderToken(t, srv.Client, s, "a")
	c1, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: cursorstore.Cursor{}, Value: 300})
	if err != nil {
		t.Fatal(err)
	}
	ch := s.WatchMaster(ctx, "hive").C
	if c := next(t, ch, 10*time.Second); c.Value != 300 || c.Epoch != 0 {
		t.Fatalf("first value %+v; want 300 at epoch 0", c)
	}
	if _, err := s.RewindMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c1, Value: 4}); err != nil {
		t.Fatal(err)
	}
	c := next(t, ch, 10*time.Second)
	if c.Value != 4 || c.Epoch != 1 {
		t.Fatalf("after the rewind the watch delivered %+v; want 4 at epoch 1 in one value", c)
	}
	st, err := s.Statuses(ctx)
	if err != nil || st.Epochs["hive"] != 1 {
		t.Fatalf("status epochs = %v, %v; want hive at 1", st.Epochs, err)
	}
}
