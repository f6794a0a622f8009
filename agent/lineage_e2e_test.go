package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms/message"
)

// End-to-end scenarios of the lineage (SPEC §2a): real etcd, the fake metastore
// over Thrift, fake FEs over HTTP, sidecars wired as in production. Each ends
// with every FE holding what the metastore holds; a member that carried an old
// log's cursor into the new log would keep an FE without the new log's first
// objects for ever.

func (h *harness) committed() cursorstore.Cursor {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := cursorstore.New(h.etcd.Client, etcdPrefix, testCluster, 5*time.Second, zap.NewNop()).MasterCursor(ctx, testCatalog)
	if err != nil {
		h.t.Fatalf("read the committed cursor: %v", err)
	}
	return c
}

// awaitEpochAt waits until the committed cursor is at least v in epoch e.
func (h *harness) awaitEpochAt(e, v int64) {
	h.t.Helper()
	await(h.t, converge, fmt.Sprintf("committed cursor ≥ %d in epoch %d", v, e), func() (bool, string) {
		c := h.committed()
		return c.Epoch == e && c.Value >= v, fmt.Sprintf("%d at epoch %d", c.Value, c.Epoch)
	})
}

// holdNextApply holds member i's next native batch at its FE until the
// returned release is called; it returns once the batch is in flight.
func (h *harness) holdNextApply(i int, what string) (release func()) {
	h.t.Helper()
	hold := make(chan struct{})
	h.fes[i].InjectFault(fetest.Fault{Native: true, Match: "/changes", Hold: hold, Times: 1})
	h.churn(5)
	await(h.t, converge, what, func() (bool, string) {
		return len(h.fes[i].Faults()) == 0, "the FE has not received the next batch"
	})
	return func() { close(hold) }
}

// A follower held mid-apply while the metastore's log is reset and the new
// log grows past the follower's cursor: when its apply returns, the epoch
// tells it that the cursor it holds counts in the old log.
func TestResetWhileFollowerHeldMidApply(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	f := h.running()[0]
	if f == m {
		f = h.running()[1]
	}
	release := h.holdNextApply(f.i, f.name+"'s apply in flight")
	before := h.fullRefreshes(f.i)
	old := h.committed()

	h.hms.Reset(1)
	h.churn(int(old.Value) + 20) // the new log grows past every old cursor
	h.awaitEpochAt(old.Epoch+1, old.Value+1)
	release()
	h.awaitConverged(converge)
	if got := h.fullRefreshes(f.i); got <= before {
		t.Fatalf("%s's FE got no full refresh after the reset (%d before, %d after)", f.name, before, got)
	}
	if st := f.catalogStatus(); st.Epoch != old.Epoch+1 || st.MasterEpoch != old.Epoch+1 {
		t.Fatalf("%s /status epoch %d, master epoch %d; want both %d", f.name, st.Epoch, st.MasterEpoch, old.Epoch+1)
	}
}

// m0 stops at x; m1 alone handles a log reset and commits k < x; the new log
// grows past x while no sidecar runs; m0 returns alone as master. Its durable x
// belongs to the old log and must not be committed.
func TestStaleDurableCursorReturnsAfterReset(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m0 := h.start(0, memberOpts{})
	h.churn(30)
	h.awaitConverged(converge, 0)
	x := h.awaitLastCommit()
	m0.stop()

	h.hms.Reset(1)
	h.churn(10)
	m1 := h.start(1, memberOpts{})
	k := h.hms.CurrentEventID()
	h.awaitEpochAt(1, k)
	h.awaitConverged(converge, 1)
	m1.stop()

	h.churn(int(x-k) + 15)
	if cur := h.hms.CurrentEventID(); cur <= x {
		t.Fatalf("new log at %d; want past m0's old cursor %d", cur, x)
	}
	before := h.fullRefreshes(0)
	h.start(0, memberOpts{})
	h.awaitConverged(converge, 0)
	cur := h.hms.CurrentEventID()
	h.awaitEpochAt(1, cur)
	if got := h.fullRefreshes(0); got != before+1 {
		t.Fatalf("m0's FE got %d full refreshes on its return; want 1 (its cursor %d is of the old log)", got-before, x)
	}
	if c := h.committed(); c.Epoch != 1 || c.Value != cur {
		t.Fatalf("committed %d at epoch %d; want the new log's %d at epoch 1", c.Value, c.Epoch, cur)
	}
}

// An operator's `cursor reset` while a follower is held mid-apply; the master
// refreshes and commits on top of the -1 before the follower looks again.
func TestOperatorResetDuringHeldFollowerApply(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	f := h.running()[0]
	if f == m {
		f = h.running()[1]
	}
	release := h.holdNextApply(f.i, f.name+"'s apply in flight")
	before := h.fullRefreshes(f.i)
	old := h.committed()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cursorstore.New(h.etcd.Client, etcdPrefix, testCluster, 5*time.Second, zap.NewNop()).SetMaster(ctx, testCatalog, -1); err != nil {
		t.Fatal(err)
	}
	h.awaitEpochAt(old.Epoch+1, 0)
	release()
	// The reset changes nothing in the metastore, so converging proves
	// nothing here: the refresh itself is what must come.
	await(t, converge, f.name+"'s FE refreshed for the operator's reset", func() (bool, string) {
		got := h.fullRefreshes(f.i)
		return got > before, fmt.Sprintf("%d full refreshes, %d before the reset", got, before)
	})
	h.awaitConverged(converge)
}

// A metastore that ignores the skip list (servers before Hive 3): batches of
// nothing but skipped events must not make anyone jump over the kept events
// behind them.
func TestSkipListIgnoredByMetastore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{batch: 3, skip: []string{"OPEN_TXN"}})
	h.hms.IgnoreSkipList(true)
	m := h.startConverged()
	h.pauseMaster(m)
	txns := make([]message.Event, 7)
	for i := range txns {
		txns[i] = message.Event{Time: 1, Type: "OPEN_TXN", Message: "{}", Format: message.FormatJSON}
	}
	h.hms.Append(txns...)
	h.churn(10)
	h.setPause(false)
	h.awaitConverged(converge)
}

// An FE restarted empty (its applied event id back to -1) is brought back
// with a full refresh by its member, not sent the next batch as if nothing
// happened; /status shows what the FE reported beside the member's cursor.
func TestFERestartedEmptyGetsFullRefresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	f := h.running()[0]
	if f == m {
		f = h.running()[1]
	}
	sent := len(h.fes[f.i].Changes())
	h.fes[f.i].DropCache(testCatalog)
	h.churn(10)
	h.awaitConverged(converge)
	batches := h.fes[f.i].Changes()[sent:]
	if len(batches) == 0 || !batches[0].FullRefresh {
		t.Fatalf("after its FE restarted empty, %s sent %s; want a full refresh first", f.name, batchesString(batches))
	}
	st := f.catalogStatus()
	if st.FEApplied == nil || *st.FEApplied != st.Cursor {
		t.Fatalf("%s /status: FE reported %v, cursor %d; want the FE's applied id beside the cursor, equal once converged", f.name, st.FEApplied, st.Cursor)
	}
}
