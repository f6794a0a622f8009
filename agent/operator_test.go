package agent_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms/message"
)

// An operator's `cursor set` while a master runs: the master adopts the value
// and continues after it, instead of committing its own cursor over it.

// Lowering: the master's FE is sent the events after N again, the committed
// cursor goes X, N and then only up, the master's durable member cursor
// follows. Lowering starts a new epoch (SPEC §2a): the followers, ahead of N,
// cannot know what the operator wants undone, so each full-refreshes once,
// into the new lineage, instead of carrying on from its old cursor.
func TestOperatorLowersMasterCursor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	h.churn(20)
	h.awaitConverged(converge)
	x := h.awaitLastCommit()
	n := x - 12
	memberCursors := h.recordKey(memberCursorKey(m.name))
	sent := h.batchCounts()
	commitsBefore := len(h.allCommits())

	h.operatorSetCursor(n)
	await(t, converge, fmt.Sprintf("the master's FE to be sent the events (%d, %d] again", n, x), func() (bool, string) {
		return h.everyEventSent(m.i, sent[m.i], n, x)
	})
	h.churn(10)
	h.awaitConverged(converge)
	cur := h.hms.CurrentEventID()
	h.awaitLastCommitIs(cur)

	if b := h.fes[m.i].Changes()[sent[m.i]:]; b[0].From != n || b[0].FullRefresh {
		t.Errorf("the master's first batch after the operator's set: %s, want one of changes after %d", batchString(b[0]), n)
	}
	h.checkOperatorCommits(commitsBefore, n, cur)
	h.checkFollowersRefreshedOnce(m.i, sent, n)
	checkSetLogged(t, m, x, n)
	if !containsValue(memberCursors(), n) {
		t.Errorf("the master's durable member cursor never held the operator's %d (values %v): a restart would resume from the old value", n, memberCursors())
	}
}

// Raising within a backlog: the master's FE never gets the events up to M and
// continues after M; followers still apply them from the metastore's log.
func TestOperatorRaisesMasterCursor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	x := h.awaitLastCommit()
	// The pause holds the master at x while the backlog arrives: the master's
	// loop itself holding, not merely the key seen (a cycle already running
	// would still read the first events of the backlog).
	h.pauseMaster(m)
	sent := h.batchCounts()
	commitsBefore := len(h.allCommits())
	h.churn(30)
	raised := x + 15

	h.operatorSetCursor(raised)
	h.setPause(false)
	h.awaitConverged(converge, otherThan(m.i)...)
	cur := h.hms.CurrentEventID()
	await(t, converge, "the master's FE and cursor at the metastore's current id", func() (bool, string) {
		fe, own := h.fes[m.i].AppliedEventID(testCatalog), m.catalogStatus().Cursor
		return fe == cur && own == cur, fmt.Sprintf("FE applied %d, cursor %d, metastore at %d", fe, own, cur)
	})
	h.awaitLastCommitIs(cur)

	batches := h.fes[m.i].Changes()[sent[m.i]:]
	if len(batches) == 0 || batches[0].From != raised {
		t.Errorf("the master's batches after the raise to %d: %s, want the first to start after %d", raised, batchesString(batches), raised)
	}
	for _, b := range batches {
		if b.FullRefresh || b.From < raised {
			t.Errorf("the master's FE was sent %s after the raise to %d: want nothing before event %d", batchString(b), raised, raised+1)
		}
		for _, d := range b.Changes {
			if d.EventID <= raised {
				t.Errorf("the master's FE was sent the change of skipped event %d (%s %s.%s)", d.EventID, d.Op, d.DB, d.Table)
			}
		}
	}
	h.checkOperatorCommits(commitsBefore, raised, cur)
	for _, i := range otherThan(m.i) {
		h.checkEveryEventApplied(i, x)
	}
	checkSetLogged(t, m, x, raised)
}

// Raising beyond the metastore's current id is treated as a reset of its log:
// the master full-refreshes and rewinds the cursor to the current id, and the
// cluster goes on from there.
func TestOperatorSetsCursorBeyondMetastore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	x := h.awaitLastCommit()
	base := h.allFullRefreshes()
	commitsBefore := len(h.allCommits())
	beyond := x + 100

	h.operatorSetCursor(beyond)
	await(t, converge, fmt.Sprintf("the master to rewind the cursor from %d to %d", beyond, x), func() (bool, string) {
		got := h.allCommits()[commitsBefore:]
		return len(got) >= 2, fmt.Sprintf("commits since the set: %v", got)
	})
	h.awaitConverged(converge)
	if got := h.allCommits()[commitsBefore:]; len(got) != 2 || got[0] != beyond || got[1] != x {
		t.Errorf("commits after the operator set %d with the metastore at %d: %v, want [%d %d] (the master rewinds)", beyond, x, got, beyond, x)
	}
	if got := h.fullRefreshes(m.i) - base[m.i]; got != 1 {
		t.Errorf("the master's FE got %d full refreshes, want 1", got)
	}
	checkSetLogged(t, m, x, beyond)
	// The cluster goes on from the metastore's id.
	h.churn(10)
	h.awaitConverged(converge)
	h.checkCommitsMonotonic(commitsBefore + 1)
	for i := range 3 {
		h.checkEveryEventApplied(i, x)
	}
}

// An operator's write that lands while the master applies a batch makes the
// master's fenced commit fail with a conflict; the operator's value wins.
func TestOperatorSetDuringMasterApplyWins(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	x := h.awaitLastCommit()
	n := x - 3
	sent := h.batchCounts()
	commitsBefore := len(h.allCommits())
	conflicts := m.metric("hmssync_fenced_write_rejections_total", `reason="conflict"`)

	// The master's next apply is held at its FE until the operator's write
	// is in etcd; then it succeeds (well within the applier's 2s timeout).
	hold := make(chan struct{})
	m.fe.InjectFault(fetest.Fault{Native: true, Match: "/changes", Hold: hold, Times: 1})
	h.churn(10)
	await(t, 5*time.Second, "the master's apply in flight", func() (bool, string) {
		return len(m.fe.Faults()) == 0, "the master's FE has not received the next batch"
	})
	h.operatorSetCursor(n)
	close(hold)
	h.awaitConverged(converge)
	cur := h.hms.CurrentEventID()
	h.awaitLastCommitIs(cur)

	if got := m.metric("hmssync_fenced_write_rejections_total", `reason="conflict"`); got <= conflicts {
		t.Fatalf("no fenced commit conflict (%v before, %v after): the operator's write did not land while the master's apply was held, so the race under test did not happen", conflicts, got)
	}
	// The batch held in flight is the master's cursor when the operator's
	// value arrived.
	held := h.fes[m.i].Changes()[sent[m.i]]
	if ok, why := h.everyEventSent(m.i, sent[m.i]+1, n, cur); !ok {
		t.Errorf("after the operator set %d during the apply of %s, the master did not send (%d, %d] again: %s", n, batchString(held), n, cur, why)
	}
	h.checkOperatorCommits(commitsBefore, n, cur)
	checkSetLogged(t, m, held.To, n)
	// The refused commit is the operator's write showing, not a failure.
	if got := m.logs.FilterMessage("transient failure; retrying in place").All(); len(got) != 0 {
		t.Errorf("the master logged the operator's write as a transient failure: %v", got[0].ContextMap())
	}
	if st := m.catalogStatus(); strings.Contains(st.LastError, cursorstore.ErrConflict.Error()) {
		t.Errorf("the master's last error is the operator's write: %q", st.LastError)
	}
}

// A member that takes over behind the committed cursor (its FE was failing)
// catches up to it: the cursor it finds at the start of its term is where the
// previous master stopped, not an operator's value to skip to. And an
// operator's lowering to a value it has not reached yet makes it skip nothing.
func TestNewMasterBehindCommittedCursorCatchesUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.churn(5)
	first := h.start(0, memberOpts{})
	if h.master(5*time.Second) != first {
		t.Fatal("the only member is not master")
	}
	next := h.start(1, memberOpts{})
	h.awaitConverged(converge, 0, 1)
	behind := h.awaitLastCommit()

	// Only the follower's batches fail: its FE stays healthy, so it may lead.
	next.fe.InjectFault(fetest.Fault{Native: true, Match: "/changes", HTTPStatus: 503})
	h.churn(20)
	cur := h.awaitLastCommit()
	if c := next.catalogStatus().Cursor; c != behind {
		t.Fatalf("the follower's cursor is %d, want it held at %d by its failing FE", c, behind)
	}
	first.stop()
	if h.master(10*time.Second) != next {
		t.Fatal("the follower did not take over")
	}
	// Only a master reads the metastore's current id here (a follower does
	// when it is ahead of the master cursor), and it does so after reading
	// the master cursor at the start of its term.
	await(t, converge, "the new master's first cycle", func() (bool, string) {
		st := next.catalogStatus()
		return st.HMSCurrent == cur, fmt.Sprintf("metastore id as read by %s: %d", next.name, st.HMSCurrent)
	})
	if n := next.logs.FilterMessage("master cursor set by an operator").Len(); n != 0 {
		t.Errorf("the new master took the cursor %d it found at the start of its term for an operator's (%d warnings)", cur, n)
	}

	lowered := behind + 10
	h.operatorSetCursor(lowered)
	await(t, converge, "the new master to take up the operator's value", func() (bool, string) {
		return next.logs.FilterMessage("master cursor set by an operator").Len() > 0, "no warning logged"
	})
	entry := next.logs.FilterMessage("master cursor set by an operator").All()[0]
	if got := entry.ContextMap()["continue_after"]; got != behind {
		t.Errorf("the new master at %d continues after %v once the cursor is lowered to %d, want %d: it would skip events its FE never got", behind, got, lowered, behind)
	}
	next.fe.ClearFaults()
	h.awaitConverged(converge, 1)
	h.checkEveryEventApplied(1, behind)
}

// --- helpers ---

// operatorSetCursor is `hmssync cursor set --force v`: the same store call.
func (h *harness) operatorSetCursor(v int64) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	store := cursorstore.New(h.etcd.Client, etcdPrefix, testCluster, 5*time.Second, zap.NewNop())
	if _, err := store.SetMasterLed(ctx, testCatalog, v); err != nil {
		h.t.Fatalf("operator's cursor set %d: %v", v, err)
	}
}

// awaitLastCommit waits until the test's watch has seen the commit of the
// metastore's current id, and returns it.
func (h *harness) awaitLastCommit() int64 {
	h.t.Helper()
	cur := h.hms.CurrentEventID()
	h.awaitLastCommitIs(cur)
	return cur
}

func (h *harness) awaitLastCommitIs(v int64) {
	h.t.Helper()
	await(h.t, converge, fmt.Sprintf("the test's watch to see the commit of %d", v), func() (bool, string) {
		c := h.allCommits()
		return len(c) > 0 && c[len(c)-1] == v, fmt.Sprintf("commits %v", c)
	})
}

// checkOperatorCommits checks the commits since index from: the operator's
// value first, then only increasing values ending at last.
func (h *harness) checkOperatorCommits(from int, set, last int64) {
	h.t.Helper()
	c := h.allCommits()[from:]
	if len(c) < 2 || c[0] != set || c[len(c)-1] != last {
		h.t.Errorf("commits since the operator's set: %v, want %d first and %d last", c, set, last)
		return
	}
	for i := 1; i < len(c); i++ {
		if c[i] <= c[i-1] {
			h.t.Errorf("commits since the operator's set of %d: %v, want only increasing values after it", set, c)
			return
		}
	}
}

// batchCounts is how many batches each FE has received so far.
func (h *harness) batchCounts() []int {
	out := make([]int, len(h.fes))
	for i, fe := range h.fes {
		out[i] = len(fe.Changes())
	}
	return out
}

// everyEventSent reports whether FE i, from its batch number since on, was
// sent the changes of every event in (after, upTo], as the reference decoder
// reads them from the metastore's log.
func (h *harness) everyEventSent(i, since int, after, upTo int64) (bool, string) {
	all := h.fes[i].Changes()
	if since > len(all) {
		return false, fmt.Sprintf("FE %d has %d batches", i, len(all))
	}
	batches := all[since:]
	dec := message.Decoder{}
	for _, ev := range h.hms.Events() {
		if ev.ID <= after || ev.ID > upTo {
			continue
		}
		want, err := dec.Decode(ev)
		if err != nil || len(want) == 0 {
			continue
		}
		if !sentChanges(batches, ev.ID, len(want)) {
			return false, fmt.Sprintf("event %d (%s %s.%s) not among %s", ev.ID, ev.Type, ev.DB, ev.Table, batchesString(batches))
		}
	}
	return true, ""
}

// sentChanges reports whether a batch of changes (not a full refresh) carried
// n changes of event id.
func sentChanges(batches []change.Batch, id int64, n int) bool {
	for _, b := range batches {
		if b.FullRefresh || b.From >= id || b.To < id {
			continue
		}
		got := 0
		for _, d := range b.Changes {
			if d.EventID == id {
				got++
			}
		}
		if got == n {
			return true
		}
	}
	return false
}

// checkFollowersDidNotGoBack checks that no follower's FE was sent a batch
// starting before x since its batch number sent[i]: a follower ahead of a
// lowered master cursor waits for the master to pass it again.
// checkFollowersRefreshedOnce checks that each follower's FE got exactly one
// full refresh after the operator lowered the cursor to n, and nothing of the
// old lineage before it.
func (h *harness) checkFollowersRefreshedOnce(master int, sent []int, n int64) {
	h.t.Helper()
	for _, i := range otherThan(master) {
		refreshes := 0
		for _, b := range h.fes[i].Changes()[sent[i]:] {
			if b.FullRefresh {
				refreshes++
				if b.To < n {
					h.t.Errorf("follower FE %d was refreshed as of %d, below the operator's %d", i, b.To, n)
				}
			} else if refreshes == 0 {
				h.t.Errorf("follower FE %d was sent %s before refreshing into the new epoch", i, batchString(b))
			}
		}
		if refreshes != 1 {
			h.t.Errorf("follower FE %d got %d full refreshes after the cursor was lowered; want 1", i, refreshes)
		}
	}
}

func checkSetLogged(t *testing.T, m *member, old, set int64) {
	t.Helper()
	entries := m.logs.FilterMessage("master cursor set by an operator").FilterField(zap.Int64("new", set)).All()
	if len(entries) != 1 {
		t.Errorf("%s logged %d warnings of the operator's set to %d, want 1", m.name, len(entries), set)
		return
	}
	if got := entries[0].ContextMap()["old"]; got != old {
		t.Errorf("%s logged the operator's set with old=%v, want %d", m.name, got, old)
	}
}

func memberCursorKey(member string) string {
	return etcdPrefix + "/" + testCluster + "/members/" + member + "/cursors/" + testCatalog
}

// recordKey follows a decimal key with the test's own client and returns
// what it has seen so far, in order.
func (h *harness) recordKey(key string) func() []int64 {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.t.Cleanup(func() { cancel(); <-done })
	var vals []int64
	wch := h.etcd.Client.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithCreatedNotify())
	// The first answer says the watch is established: nothing written after
	// recordKey returns is missed.
	if resp, ok := <-wch; !ok || !resp.Created {
		h.t.Fatalf("watch %s: not established: %v", key, resp.Err())
	}
	go func() {
		defer close(done)
		for resp := range wch {
			for _, ev := range resp.Events {
				v, err := strconv.ParseInt(string(ev.Kv.Value), 10, 64)
				if ev.Type != clientv3.EventTypePut || err != nil {
					continue
				}
				h.mu.Lock()
				vals = append(vals, v)
				h.mu.Unlock()
			}
		}
	}()
	return func() []int64 {
		h.mu.Lock()
		defer h.mu.Unlock()
		return append([]int64(nil), vals...)
	}
}

func containsValue(vs []int64, v int64) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func batchString(b change.Batch) string {
	if b.FullRefresh {
		return fmt.Sprintf("full refresh as of %d", b.To)
	}
	return fmt.Sprintf("(%d, %d] with %d changes", b.From, b.To, len(b.Changes))
}

func batchesString(bs []change.Batch) string {
	s := "["
	for i, b := range bs {
		if i > 0 {
			s += ", "
		}
		s += batchString(b)
	}
	return s + "]"
}
