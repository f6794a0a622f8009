package agent_test

import (
	"fmt"
	"testing"
	"time"
)

// A master that finds a backlog reads it in fetches of at most the batch size
// but applies and commits it as one batch (up to 10,000 events), so that an FE
// gets one statement per table for the whole backlog.
func TestMasterGathersBacklogIntoOneBatch(t *testing.T) {
	h := newHarness(t, harnessOpts{batch: 20})
	h.churn(5)
	m := h.start(0, memberOpts{})
	h.awaitConverged(converge, 0)
	if h.master(5*time.Second) != m {
		t.Fatal("the only member is not master")
	}
	h.setPause(true)
	await(t, 5*time.Second, "master paused", func() (bool, string) { return m.status().Paused, "" })
	from := h.masterCursor()
	commitsBefore := h.commitCount()
	batchesBefore := len(h.fes[0].Changes())
	fetchesBefore := h.hms.Calls("get_next_notification")
	h.churn(95) // five fetches of 20 and one of 15
	target := h.hms.CurrentEventID()
	if target-from < 95 {
		t.Fatalf("backlog of %d events, want at least 95", target-from)
	}
	h.setPause(false)
	await(t, 10*time.Second, "the master's commit of the backlog", func() (bool, string) {
		return h.masterCursor() == target, fmt.Sprintf("master cursor %d, want %d", h.masterCursor(), target)
	})

	if n := h.commitCount() - commitsBefore; n != 1 {
		t.Errorf("%d master cursor commits for the backlog, want 1", n)
	}
	batches := h.fes[0].Changes()[batchesBefore:]
	if len(batches) != 1 || batches[0].From != from || batches[0].To != target {
		var got []string
		for _, b := range batches {
			got = append(got, fmt.Sprintf("(%d, %d]", b.From, b.To))
		}
		t.Errorf("FE received batches %v, want one: (%d, %d]", got, from, target)
	}
	// ceil(95 / 20) = 5 fetches at least (more if the skip list or the
	// workload's set-up added events).
	if n := h.hms.Calls("get_next_notification") - fetchesBefore; n < 5 {
		t.Errorf("%d fetches for a backlog of %d events in batches of 20, want at least 5", n, target-from)
	}
	h.checkEveryEventApplied(0, from)
}
