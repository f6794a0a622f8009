package agent_test

import (
	"fmt"
	"testing"
)

// A follower never reads past the committed master cursor (SPEC §2): with the
// cursor held while the metastore has more events, a follower that was behind
// catches up to exactly the held value, and the metastore never served it an
// event above it; when the master cursor moves on, the follower follows.
func TestFollowerNeverReadsPastMasterCursor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{batch: 20})
	m := h.startConverged()
	f := h.running()[0]
	if f == m {
		f = h.running()[1]
	}
	f.stop()
	// Behind by 47 events: not a multiple of the batch size, so the
	// follower's last read must be cut short at the master cursor.
	h.churn(47)
	h.awaitConverged(converge, otherThan(f.i)...)
	h.pauseMaster(m)
	held := h.masterCursor()
	// Events above the held cursor: the follower has no business reading them.
	h.churn(30)
	if cur := h.hms.CurrentEventID(); cur <= held {
		t.Fatalf("metastore at %d, want events above the held master cursor %d", cur, held)
	}
	h.hms.RecordFetches()
	f = h.start(f.i, memberOpts{})
	await(t, converge, f.name+" at the held master cursor", func() (bool, string) {
		applied, own, stored := f.fe.AppliedEventID(testCatalog), f.catalogStatus().Cursor, h.memberCursor(f.name)
		return applied == held && own == held && stored == held,
			fmt.Sprintf("FE applied up to %d, own cursor %d, durable cursor %d; master cursor %d", applied, own, stored, held)
	})
	reads := 0
	for _, x := range h.hms.Fetches() {
		if x.User != f.name {
			continue
		}
		reads++
		if x.Highest > held {
			t.Errorf("the metastore served %s events up to %d (a read of at most %d after %d) while the master cursor was %d",
				f.name, x.Highest, x.Max, x.After, held)
		}
	}
	if reads == 0 {
		t.Fatalf("the metastore served %s no read: the check above says nothing", f.name)
	}

	h.setPause(false)
	h.awaitConverged(converge)
	cur := h.hms.CurrentEventID()
	await(t, converge, f.name+"'s durable cursor at the metastore's id", func() (bool, string) {
		got := h.memberCursor(f.name)
		return got == cur, fmt.Sprintf("durable cursor %d, metastore at %d", got, cur)
	})
}
