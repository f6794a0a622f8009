package cursorstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// The open-transaction state travels with the cursors: the master's in its
// fenced commit, a member's with its own cursor, each in one transaction, and
// is read back with them.
func TestTxnStateIsWrittenAndReadWithTheCursors(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	tok := leaderToken(t, srv.Client, s, "a")
	const state = `{"version":1,"complete_from":7,"open":[{"txn":7,"since":10,"tables":[["sales","orders"]]}]}`

	c0, err := s.MasterCursor(ctx, "hive")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c0, Value: 10, Txns: state})
	if err != nil {
		t.Fatal(err)
	}
	v, rev, ok := raw(t, srv.Client, s.MasterTxnsKey("hive"))
	if !ok || v != state || rev != c1.Rev || c1.Txns != state || c1.TxnsRev != rev {
		t.Fatalf("after the commit: etcd %q@%d (present %v), returned %q@%d; want the state at the cursor's revision %d", v, rev, ok, c1.Txns, c1.TxnsRev, c1.Rev)
	}
	// "" leaves the key as it is: an unchanged state is not written again.
	c2, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c1, Value: 11})
	if err != nil {
		t.Fatal(err)
	}
	if v, r, _ := raw(t, srv.Client, s.MasterTxnsKey("hive")); v != state || r != rev || c2.Txns != state || c2.TxnsRev != rev {
		t.Fatalf("a commit without a state: etcd %q@%d, returned %q@%d; want it untouched at %d", v, r, c2.Txns, c2.TxnsRev, rev)
	}
	read, err := s.MasterCursor(ctx, "hive")
	if err != nil || read.Txns != state || read.TxnsRev != rev || read.Value != 11 {
		t.Fatalf("MasterCursor = %+v, %v", read, err)
	}
	// A state over the bound is refused, nothing written.
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c2, Value: 12, Txns: strings.Repeat("x", cursorstore.MaxTxnsBytes+1)}); err == nil {
		t.Fatal("a state over MaxTxnsBytes was committed")
	}
	if v, _, _ := raw(t, srv.Client, s.MasterCursorKey("hive")); v != "11" {
		t.Fatalf("the refused commit wrote the cursor %q", v)
	}
	// An operator's value is not the one the state is as of: deleted.
	if _, err := s.SetMaster(ctx, "hive", 5); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := raw(t, srv.Client, s.MasterTxnsKey("hive")); ok {
		t.Fatal("the state survived an operator's cursor set")
	}

	// A member's state with its cursor.
	if err := s.PutMemberCursorTxns(ctx, "m1", "hive", 20, 0, state); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMemberCursorTxns(ctx, "m1", "hive", 21, 0, ""); err != nil {
		t.Fatal(err)
	}
	m, err := s.MemberCursor(ctx, "m1", "hive")
	if err != nil || m.Value != 21 || m.Txns != state {
		t.Fatalf("MemberCursor = %+v, %v; want 21 with the state", m, err)
	}
	if v, _, _ := raw(t, srv.Client, s.MemberTxnsKey("m1", "hive")); v != state {
		t.Fatalf("etcd holds %q at %s", v, s.MemberTxnsKey("m1", "hive"))
	}
	if err := s.PutMemberCursorTxns(ctx, "m1", "hive", 22, 0, strings.Repeat("x", cursorstore.MaxTxnsBytes+1)); err == nil {
		t.Fatal("a member state over MaxTxnsBytes was written")
	}
}

// The master watch delivers the state with the cursor.
func TestWatchMasterDeliversTheTxnState(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tok := leaderToken(t, srv.Client, s, "a")
	w := s.WatchMaster(ctx, "hive")
	c0, err := s.MasterCursor(ctx, "hive")
	if err != nil {
		t.Fatal(err)
	}
	const state = `{"version":1,"complete_from":-1,"open":[]}`
	if _, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: c0, Value: 3, Txns: state}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-w.C:
			if c.Value == 3 && c.Txns == state {
				cancel()
				for range w.C {
				}
				return
			}
		case <-timeout:
			t.Fatal("the watch never delivered the cursor with its state")
		}
	}
}
