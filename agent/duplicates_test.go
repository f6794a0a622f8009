package agent

import (
	"testing"
)

// appliedCounts counts how often the FE received each event id.
func (f *memFE) appliedCounts() map[int64]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := map[int64]int{}
	for _, b := range f.batches {
		for _, c := range b.Changes {
			n[c.EventID]++
		}
	}
	return n
}

// checkOnce fails unless the FE received every event of ids 2..last exactly
// once.
func checkOnce(t *testing.T, fe *memFE, last int64) {
	t.Helper()
	got := fe.appliedCounts()
	for id := int64(2); id <= last; id++ {
		if got[id] != 1 {
			t.Fatalf("event %d applied %d times; want once (all: %v)", id, got[id], got)
		}
	}
	if len(got) != int(last-1) {
		t.Fatalf("applied %v; want events 2 to %d once each", got, last)
	}
}

// Duplicate event ids (HIVE-16886: several metastore instances writing one
// database), within a batch and repeating the last one of the batch before,
// reach the FE once each, and the master's cursor moves to the newest id.
func TestMasterAppliesDuplicateEventIDsOnce(t *testing.T) {
	t.Parallel()
	log := &memLog{dupes: true}
	log.add("ALTER_TABLE", 1)
	store := newMemStore()
	store.commitAs(1, 0)
	seedMember(store, "m0", 1, 0)
	log.add("ALTER_TABLE", 9) // 2..10
	r := newRig(t, log, store, rigOpts{batch: 4})
	r.becomeMaster()
	r.run(20)
	checkOnce(t, r.fe, 10)
	if store.cursor != 10 || r.fe.refreshes() != 0 {
		t.Fatalf("committed %d with %d full refreshes; want 10 and none", store.cursor, r.fe.refreshes())
	}
	log.add("ALTER_TABLE", 2) // 11, 12: the next cycle goes on from 10
	r.run(20)
	if got := r.fe.appliedCounts(); got[11] != 1 || got[12] != 1 || got[10] != 1 || store.cursor != 12 {
		t.Fatalf("after more events: applied %v, committed %d; want 10, 11 and 12 once each, committed 12", got, store.cursor)
	}
}

// A follower reading the same log applies each event once too.
func TestFollowerAppliesDuplicateEventIDsOnce(t *testing.T) {
	t.Parallel()
	log := &memLog{dupes: true}
	log.add("ALTER_TABLE", 10)
	store := newMemStore()
	store.commitAs(10, 0)
	seedMember(store, "f", 1, 0)
	r := newRig(t, log, store, rigOpts{batch: 4, member: "f"})
	r.run(20)
	checkOnce(t, r.fe, 10)
	if r.l.cursor.Value() != 10 || r.fe.refreshes() != 0 {
		t.Fatalf("follower at %d with %d full refreshes; want the master cursor 10 and none", r.l.cursor.Value(), r.fe.refreshes())
	}
}
