package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A doris master that finds a backlog reads it in fetches of at most the batch
// size but applies and commits it as one batch (up to 10,000 events), so that
// the FE gets one statement per table for the whole backlog.
func TestDorisMasterGathersBacklogIntoOneBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{dialect: "doris", batch: 20})
	from, target, statements := h.drainPausedBacklog(95) // five fetches of 20 and one of 15
	if n := h.commitsAbove(from); n != 1 {
		t.Errorf("%d master cursor commits for the backlog (%d, %d], want 1", n, from, target)
	}
	// One batch: no statement twice (the churn's three tables each get one
	// REFRESH; per fetch they would be refreshed in almost every fetch).
	seen := map[string]bool{}
	for _, s := range statements {
		if seen[s] {
			t.Errorf("statement sent twice for one backlog: %s\nall: %s", s, strings.Join(statements, "\n"))
		}
		seen[s] = true
	}
	if len(statements) == 0 {
		t.Error("no statement for the backlog")
	}
}

// A native master applies and commits a backlog every four fetches: each
// commit releases the followers' own work, so it gathers only a few fetches
// into a batch (agent.localDrainFetches).
func TestNativeMasterCommitsEveryFourFetches(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{batch: 20})
	from, target, _ := h.drainPausedBacklog(95)
	fetches := int((target - from + 19) / 20)
	if n, want := h.commitsAbove(from), (fetches+3)/4; n != want {
		t.Errorf("%d master cursor commits for the backlog (%d, %d], want %d (one per four fetches of 20); commits %v", n, from, target, want, h.allCommits())
	}
	h.checkEveryEventApplied(0, from)
}

// drainPausedBacklog starts one member, lets it catch up, then holds it with
// the pause key while n events arrive and releases it: it finds them as one
// backlog. It returns the master cursor before and after, and the SQL
// statements the FE received for the backlog; the commit count starts at 0
// for the backlog.
func (h *harness) drainPausedBacklog(n int) (from, target int64, statements []string) {
	h.t.Helper()
	h.churn(5)
	m := h.start(0, memberOpts{})
	h.awaitConverged(converge, 0)
	if h.master(5*time.Second) != m {
		h.t.Fatal("the only member is not master")
	}
	h.pauseMaster(m)
	from = h.masterCursor()
	stmtsBefore := len(h.fes[0].Statements())
	fetchesBefore := h.hms.Calls("get_next_notification")
	h.churn(n)
	target = h.hms.CurrentEventID()
	h.setPause(false)
	// Wait on the recorded commits, not on a read of the key: the commits are
	// counted from the test's watch, which may deliver the last one after a
	// read already shows it.
	await(h.t, 10*time.Second, "the master's commit of the backlog, as the test's watch saw it", func() (bool, string) {
		c := h.allCommits()
		return len(c) > 0 && c[len(c)-1] == target, fmt.Sprintf("commits seen %v, want the last to be %d", c, target)
	})
	if got, want := h.hms.Calls("get_next_notification")-fetchesBefore, int((target-from+19)/20); got < want {
		h.t.Errorf("%d fetches for a backlog of %d events in batches of 20, want at least %d", got, target-from, want)
	}
	for _, s := range h.fes[0].Statements()[stmtsBefore:] {
		if strings.HasPrefix(s, "REFRESH") {
			statements = append(statements, s)
		}
	}
	return from, target, statements
}

// commitsAbove counts the master cursor commits of values above v.
func (h *harness) commitsAbove(v int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.commits {
		if c > v {
			n++
		}
	}
	return n
}

func (h *harness) allCommits() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.commits...)
}
