package agent_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// A master that loses its role never names itself as the leader in its "no
// longer master" line (the elector's last observed leader is its own stale
// value at that moment); /status shows the master's term, and each commit is
// logged at debug with that term, so an operator can tell who wrote a cursor.
func TestRoleLossAndCommitsNameTheRightTerm(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	master := h.startConverged()
	term := master.status().Term
	if term <= 0 {
		t.Fatalf("/status of the master shows term %d, want its election key's create revision", term)
	}
	if fol := h.members[(master.i+1)%3].status(); fol.Term != 0 {
		t.Errorf("/status of a follower shows term %d, want none", fol.Term)
	}

	h.churn(3)
	var committed string
	await(t, 10*time.Second, "the last commit logged with the term", func() (bool, string) {
		h.awaitConverged(converge)
		committed = strconv.FormatInt(h.masterCursor(), 10)
		for _, e := range master.logs.FilterMessage("committed master cursor").All() {
			f := e.ContextMap()
			if fmt.Sprint(f["cursor"]) == committed {
				if fmt.Sprint(f["term"]) != strconv.FormatInt(term, 10) {
					t.Fatalf("commit of %s logged with term %v, want %d", committed, f["term"], term)
				}
				return true, ""
			}
		}
		return false, "no debug line for the commit of " + committed
	})

	for round := range 3 {
		master = h.master(10 * time.Second)
		before := master.logs.FilterMessage("no longer master").Len()
		master.el.StepDown("test: hand the role over")
		await(t, 10*time.Second, "the role lost and logged", func() (bool, string) {
			return master.logs.FilterMessage("no longer master").Len() > before, ""
		})
		for _, e := range master.logs.FilterMessage("no longer master").All()[before:] {
			if leader, ok := e.ContextMap()["leader"]; ok && leader == master.name {
				t.Errorf("round %d: %s logged %q naming itself as the leader", round, master.name, e.Message)
			}
		}
	}
}
