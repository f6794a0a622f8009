package agent

import (
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
)

// seedAt writes the keys `hmssync cursor seed` writes (cursorstore.SeedMaster):
// the committed cursor at value, a new epoch (0 for a new catalog, + 1 over an
// existing one), the metastore's uuid and the seed key.
func (s *memStore) seedAt(value int64, uuid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	epoch := int64(0)
	if s.cursorRev != 0 || s.epochRev != 0 {
		epoch = s.epoch + 1
	}
	s.cursor, s.cursorRev, s.epoch, s.epochRev = value, s.rev, epoch, s.rev
	s.uuid, s.uuidRev = uuid, s.rev
	s.seed = cursorstore.Seed{Exists: true, Value: value, Epoch: epoch, From: "test", Rev: s.rev}
}

// observe replaces the loop's logger by one the test reads.
func (r *rig) observe() *observer.ObservedLogs {
	core, logs := observer.New(zapcore.DebugLevel)
	r.l.log = zap.New(core)
	return logs
}

// appliedIDs are the event ids the FE received, in order.
func (f *memFE) appliedIDs() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int64
	for _, b := range f.batches {
		for _, c := range b.Changes {
			ids = append(ids, c.EventID)
		}
	}
	return ids
}

func idsFrom(from, to int64) []int64 {
	var ids []int64
	for id := from; id <= to; id++ {
		ids = append(ids, id)
	}
	return ids
}

// The first master of a seeded catalog starts from the seed: no full refresh,
// only the events after the seed reach its FE, the commits continue the seed's
// epoch with the metastore's identity accepted, and its log says so.
func TestFirstMasterStartsFromTheSeedWithoutAFullRefresh(t *testing.T) {
	log := &memLog{uuid: "db-1"}
	log.add("ALTER_TABLE", 10)
	store := newMemStore()
	store.seedAt(6, "db-1")
	r := newRig(t, log, store, rigOpts{report: true})
	logs := r.observe()
	r.becomeMaster()
	r.run(10)

	if n := r.fe.refreshes(); n != 0 {
		t.Fatalf("the FE got %d full refreshes; want none (the seed says it holds the log up to 6)", n)
	}
	if got, want := r.fe.appliedIDs(), idsFrom(7, 10); !slices.Equal(got, want) {
		t.Fatalf("the FE received events %v; want %v, the events after the seed", got, want)
	}
	c, _ := store.MasterCursor(t.Context(), "hive")
	if c.Value != 10 || c.Epoch != 0 || store.rewind != 0 {
		t.Fatalf("committed %d in epoch %d after %d rewinds; want 10 in the seed's epoch 0, no new lineage", c.Value, c.Epoch, store.rewind)
	}
	if got := logs.FilterMessageSnippet("starting from the seeded cursor").Len(); got != 1 {
		t.Fatalf("%d log lines say the master started from the seed; want 1 (logs: %v)", got, logs.All())
	}
	if v := store.members["m0"]; v != [2]int64{10, 0} {
		t.Fatalf("the member's durable cursor is %v; want [10 0]", v)
	}
	log.add("ALTER_TABLE", 2)
	r.run(10)
	if n := r.fe.refreshes(); n != 0 || !slices.Equal(r.fe.appliedIDs(), idsFrom(7, 12)) {
		t.Fatalf("after two more events: %d refreshes, events %v; want 0 and 7..12", n, r.fe.appliedIDs())
	}
}

// A follower of a seeded catalog, local scope and cluster scope, starts from
// the seed too: it applies (or, cluster scope, moves past) the events between
// the seed and the master's commit, without a full refresh.
func TestFollowerStartsFromTheSeed(t *testing.T) {
	for _, scope := range []applier.Scope{applier.ScopeLocal, applier.ScopeCluster} {
		t.Run(string(scope), func(t *testing.T) {
			log := &memLog{uuid: "db-1"}
			log.add("ALTER_TABLE", 10)
			store := newMemStore()
			store.seedAt(4, "db-1")
			store.commitAs(9, 0) // the master applied up to 9
			r := newRig(t, log, store, rigOpts{scope: scope, member: "m1"})
			r.run(10)
			if n := r.fe.refreshes(); n != 0 {
				t.Fatalf("the follower's FE got %d full refreshes; want none", n)
			}
			want := idsFrom(5, 9)
			if scope == applier.ScopeCluster {
				want = nil // the master's apply reached this FE through the FE's own replication
			}
			if got := r.fe.appliedIDs(); !slices.Equal(got, want) {
				t.Fatalf("the follower's FE received %v; want %v", got, want)
			}
			if v := store.members["m1"]; v != [2]int64{9, 0} {
				t.Fatalf("the follower's durable cursor is %v; want [9 0]", v)
			}
		})
	}
}

// Which start a member takes with a seed present: its own durable cursor of
// the seed's lineage wins (a restart resumes), one of an earlier lineage gives
// way to a seed written over it with --force, and a seed that no longer starts
// the committed lineage (the log was reset since) is ignored: full refresh.
func TestSeedIsTakenOnlyByMembersOutsideItsLineage(t *testing.T) {
	t.Run("restart resumes its own cursor", func(t *testing.T) {
		log := &memLog{}
		log.add("ALTER_TABLE", 10)
		store := newMemStore()
		store.seedAt(3, "")
		store.members["m0"] = [2]int64{8, 0}
		r := newRig(t, log, store, rigOpts{})
		r.becomeMaster()
		r.run(10)
		if got := r.fe.appliedIDs(); r.fe.refreshes() != 0 || !slices.Equal(got, idsFrom(9, 10)) {
			t.Fatalf("refreshes %d, events %v; want 0 and 9..10 (resumed after its own 8)", r.fe.refreshes(), got)
		}
	})
	t.Run("forced seed over an earlier lineage", func(t *testing.T) {
		log := &memLog{}
		log.add("ALTER_TABLE", 10)
		store := newMemStore()
		store.commitAs(2, 0)
		store.members["m0"] = [2]int64{2, 0}
		store.seedAt(7, "") // --force: epoch 1
		r := newRig(t, log, store, rigOpts{})
		r.becomeMaster()
		r.run(10)
		if got := r.fe.appliedIDs(); r.fe.refreshes() != 0 || !slices.Equal(got, idsFrom(8, 10)) {
			t.Fatalf("refreshes %d, events %v; want 0 and 8..10 (started from the forced seed)", r.fe.refreshes(), got)
		}
	})
	t.Run("unreadable seed", func(t *testing.T) {
		log := &memLog{}
		log.add("ALTER_TABLE", 10)
		store := newMemStore()
		store.seedAt(3, "")
		store.seed.Bad = "not the JSON `hmssync cursor seed` writes"
		r := newRig(t, log, store, rigOpts{})
		logs := r.observe()
		r.becomeMaster()
		r.run(10)
		if n := r.fe.refreshes(); n != 1 || logs.FilterMessageSnippet("seed is unreadable").Len() != 1 {
			t.Fatalf("%d full refreshes, logs %v; want 1, with the unreadable seed said", n, logs.All())
		}
	})
	t.Run("seed of a replaced lineage", func(t *testing.T) {
		log := &memLog{}
		log.add("ALTER_TABLE", 10)
		store := newMemStore()
		store.seedAt(3, "")
		store.commitAs(10, 1) // a master rewound into epoch 1 since
		r := newRig(t, log, store, rigOpts{})
		r.becomeMaster()
		r.run(10)
		if n := r.fe.refreshes(); n != 1 {
			t.Fatalf("%d full refreshes; want 1: the seed of epoch 0 says nothing about epoch 1", n)
		}
	})
}

// Cluster scope: a member that joins a seeded catalog after the master moved
// on, and becomes master before its first follower step, starts where the
// master is (its FE got the master's applies through the FE's replication),
// not at the seed, whose events it would send again.
func TestLateClusterMemberStartsAtTheMasterNotTheSeed(t *testing.T) {
	log := &memLog{uuid: "db-1"}
	log.add("ALTER_TABLE", 10)
	store := newMemStore()
	store.seedAt(4, "db-1")
	store.commitAs(9, 0)
	r := newRig(t, log, store, rigOpts{scope: applier.ScopeCluster, member: "m1"})
	r.becomeMaster()
	r.run(10)
	if got := r.fe.appliedIDs(); r.fe.refreshes() != 0 || !slices.Equal(got, idsFrom(10, 10)) {
		t.Fatalf("refreshes %d, events %v; want 0 and only 10 (after the master's 9)", r.fe.refreshes(), got)
	}
}
