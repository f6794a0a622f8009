package agent

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil"
)

// Unit tests of the waiter registry (waiters.go): which cursor move wakes which
// waiter, and what a woken waiter finds.

func woken(w *waiter) bool {
	select {
	case <-w.woke:
		return true
	default:
		return false
	}
}

func localBoard() *waitBoard { return newWaitBoard("m0", "hive", applier.ScopeLocal, newMemStore()) }

func TestWaiterWakesOnlyWhenItsTargetIsApplied(t *testing.T) {
	b := localBoard()
	b.ownMoved(10, 0)
	w := &waiter{target: 15, epoch: 0}
	if v, applied := b.enqueue(scopeMember, w); v != keepWaiting || applied != 10 {
		t.Fatalf("waiter for 15 with the cursor at 10: verdict %v applied %d, want to keep waiting at 10", v, applied)
	}
	b.ownMoved(14, 0)
	if woken(w) {
		t.Fatal("a cursor move to 14 woke the waiter for 15")
	}
	b.ownMoved(15, 0)
	if !woken(w) {
		t.Fatal("the cursor reached 15 and the waiter for 15 was not woken")
	}
	if v, applied := b.enqueue(scopeMember, w); v != caughtUp || applied != 15 {
		t.Fatalf("woken waiter for 15 at 15: verdict %v applied %d, want caught up", v, applied)
	}
}

func TestEpochChangeNeverReleasesAWaiterAsCaughtUp(t *testing.T) {
	b := localBoard()
	b.ownMoved(100, 0)
	w := &waiter{target: 120, epoch: 0}
	b.enqueue(scopeMember, w)
	// The metastore's log was reset: the member refreshes into epoch 1 at
	// 200, an id of another log.
	b.ownMoved(200, 1)
	if !woken(w) {
		t.Fatal("an epoch change did not wake the waiter (it must read its target again)")
	}
	if v, _ := b.enqueue(scopeMember, w); v != rereadTarget {
		t.Fatalf("waiter of epoch 0 against a cursor of epoch 1: verdict %v, want rereadTarget (never caught up by an id of another lineage)", v)
	}
	// A target read in a lineage the member has not reached waits for it.
	ahead := &waiter{target: 5, epoch: 2}
	if v, _ := b.enqueue(scopeMember, ahead); v != keepWaiting {
		t.Fatalf("waiter of epoch 2 against a cursor of epoch 1 at 200: verdict %v, want to keep waiting", v)
	}
	b.ownMoved(300, 1)
	if woken(ahead) {
		t.Fatal("a move within epoch 1 woke a waiter of epoch 2")
	}
	b.ownMoved(7, 2)
	if v, _ := b.enqueue(scopeMember, ahead); !woken(ahead) || v != caughtUp {
		t.Fatalf("cursor at 7 in epoch 2, waiter for 5 in epoch 2: woken %v verdict %v, want caught up", woken(ahead), v)
	}
}

func TestOperatorResetHoldsAWaiterUntilTheRefreshCoversItsTarget(t *testing.T) {
	b := localBoard()
	b.ownMoved(50, 0)
	w := &waiter{target: 60, epoch: 0}
	b.enqueue(scopeMember, w)
	b.ownMoved(-1, 0) // `cursor reset`: the next step full-refreshes
	if woken(w) {
		t.Fatal("an operator reset (cursor -1) woke the waiter")
	}
	b.ownMoved(70, 0) // the full refresh at the metastore's current id
	if v, _ := b.enqueue(scopeMember, w); !woken(w) || v != caughtUp {
		t.Fatalf("full refresh at 70 covers target 60: woken %v verdict %v, want caught up", woken(w), v)
	}
}

func TestWaiterForANewLineageRereadsOnlyOnceTheMemberIsInIt(t *testing.T) {
	b := localBoard()
	b.ownMoved(100, 0)
	w := &waiter{epoch: 1, reread: true}
	if v, _ := b.enqueue(scopeMember, w); v != keepWaiting {
		t.Fatalf("target to be read in epoch 1 with the cursor in epoch 0: verdict %v, want to keep waiting", v)
	}
	b.ownMoved(150, 0)
	if woken(w) {
		t.Fatal("a move in the old lineage woke a waiter for the new one")
	}
	b.ownMoved(3, 1)
	if v, _ := b.enqueue(scopeMember, w); !woken(w) || v != rereadTarget {
		t.Fatalf("the cursor entered epoch 1: woken %v verdict %v, want the target read again", woken(w), v)
	}
}

func TestCommittedCursorIsTheMemberFigureOfAClusterScopeDialect(t *testing.T) {
	b := newWaitBoard("m1", "hive", applier.ScopeCluster, newMemStore())
	b.masterSeen(cursorstore.Cursor{Exists: true, Value: 10})
	w := &waiter{target: 12}
	b.enqueue(scopeCluster, w) // the same figure as member scope
	b.ownMoved(20, 0)          // a follower's own cursor says nothing of the FE
	if woken(w) {
		t.Fatal("with doris a follower's own cursor woke a waiter: the committed master cursor is what the FEs hold")
	}
	b.masterSeen(cursorstore.Cursor{Exists: true, Value: 12})
	if v, _ := b.enqueue(scopeMember, w); !woken(w) || v != caughtUp {
		t.Fatalf("committed cursor at 12: woken %v verdict %v, want caught up", woken(w), v)
	}
}

// fakeMembers is a members watch the test feeds.
func fakeMembers(b *waitBoard) (feed chan map[string]cursorstore.MemberProgress, opened *int) {
	feed = make(chan map[string]cursorstore.MemberProgress)
	opened = new(int)
	b.openMembers = func(ctx context.Context) cursorstore.Watch[map[string]cursorstore.MemberProgress] {
		*opened++
		out := make(chan map[string]cursorstore.MemberProgress)
		go func() {
			defer close(out)
			for {
				select {
				case <-ctx.Done():
					return
				case v := <-feed:
					select {
					case out <- v:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
		return cursorstore.Watch[map[string]cursorstore.MemberProgress]{C: out}
	}
	return feed, opened
}

func TestClusterFigureIsTheSlowestLiveMemberOfTheCommittedLineage(t *testing.T) {
	b := localBoard()
	feed, opened := fakeMembers(b)
	b.ownMoved(40, 0)
	b.masterSeen(cursorstore.Cursor{Exists: true, Value: 40})
	if *opened != 0 {
		t.Fatal("the members watch was opened while no cluster-scope waiter existed")
	}
	if !b.joinCluster() {
		t.Fatal("joinCluster refused with a members watch")
	}
	w := &waiter{target: 40}
	b.enqueue(scopeCluster, w)
	feed <- map[string]cursorstore.MemberProgress{
		"m0": {Live: true, HasCursor: true, Value: 1}, // this member: its own cursor counts, not etcd's copy
		"m1": {Live: true, HasCursor: true, Value: 35},
		"m2": {Live: false, HasCursor: true, Value: 2}, // dead: ignored
	}
	testutil.Await(t, 5*time.Second, "the cluster figure at m1's 35", func() (bool, string) { v, _, known := b.progress(scopeCluster); return known && v == 35, "" })
	if why := b.behind(scopeCluster, 40, 0); len(why) != 1 || why[0] != "member m1 at 35" {
		t.Errorf("reason %q, want only member m1 at 35", why)
	}
	if v, _ := b.enqueue(scopeCluster, w); v == caughtUp {
		t.Fatal("cluster scope caught up with live member m1 at 35 below the target 40")
	}
	// m1 in another lineage counts as not caught up whatever its value.
	feed <- map[string]cursorstore.MemberProgress{"m1": {Live: true, HasCursor: true, Value: 90, Epoch: 1}}
	testutil.Await(t, 5*time.Second, "the cluster figure at -1", func() (bool, string) { v, _, _ := b.progress(scopeCluster); return v == -1, "" })
	feed <- map[string]cursorstore.MemberProgress{"m1": {Live: true, HasCursor: true, Value: 41}}
	testutil.Await(t, 5*time.Second, "the waiter woken", func() (bool, string) { return woken(w), "" })
	if v, applied := b.enqueue(scopeCluster, w); v != caughtUp || applied != 40 {
		t.Fatalf("m0 at 40, m1 at 41: verdict %v applied %d, want caught up at 40", v, applied)
	}
	b.leaveCluster()
	if _, _, known := b.progress(scopeCluster); known {
		t.Error("the cluster figure is still known after the last cluster-scope waiter left: the watch is closed")
	}
}

// 10,000 waiters far ahead of the cursor: each move costs one comparison with
// the lowest target and wakes nobody, and the waiters' state stays small.
func TestManyWaitersCostTheLoopNothingUntilReached(t *testing.T) {
	b := localBoard()
	b.ownMoved(0, 0)
	const n = 10000
	ws := make([]*waiter, n)
	for i := range ws {
		ws[i] = &waiter{target: int64(1000 + i)}
	}
	before := heapInUse()
	for _, w := range ws {
		b.enqueue(scopeMember, w)
	}
	grew := heapInUse() - before
	t.Logf("%d queued waiters: heap grew by %d KiB (%d bytes each)", n, grew>>10, grew/n)
	if grew > 4<<20 {
		t.Errorf("%d queued waiters grew the heap by %d KiB, want at most 4 MiB", n, grew>>10)
	}
	for v := int64(1); v < 1000; v++ {
		b.ownMoved(v, 0)
	}
	if b.wakes != 0 {
		t.Fatalf("999 cursor moves below every target woke %d waiters, want none", b.wakes)
	}
	b.ownMoved(1499, 0)
	if b.wakes != 500 {
		t.Fatalf("a move to 1499 woke %d waiters, want the 500 with targets 1000..1499", b.wakes)
	}
	for i, w := range ws {
		if woken(w) != (i < 500) {
			t.Fatalf("waiter for %d woken %v at 1499", w.target, woken(w))
		}
	}
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// A value of a members watch that was closed (the last cluster-scope waiter
// left) never reaches the figure of the watch opened after it: it may miss a
// member that became live since.
func TestClosedMembersWatchValueIsIgnored(t *testing.T) {
	b := localBoard()
	fakeMembers(b)
	b.ownMoved(40, 0)
	b.masterSeen(cursorstore.Cursor{Exists: true, Value: 40})
	b.joinCluster()
	old := b.gen
	b.leaveCluster()
	b.joinCluster()
	defer b.leaveCluster()
	b.membersSeen(old, map[string]cursorstore.MemberProgress{})
	if _, _, known := b.progress(scopeCluster); known {
		t.Fatal("the cluster figure was taken from a closed watch's value (no other member live), not from the open one")
	}
	b.membersSeen(b.gen, map[string]cursorstore.MemberProgress{"m1": {Live: true, HasCursor: true, Value: 3}})
	if v, _, known := b.progress(scopeCluster); !known || v != 3 {
		t.Fatalf("cluster figure %d (known %v) from the open watch, want m1's 3", v, known)
	}
}
