package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
)

// Unit tests of the sync steps (SPEC §2, §2a) through the ports, over the
// in-memory doubles of fakes_test.go. Each names the failure it guards against as
// an operator would report it.

// seedMember gives a member a durable cursor, as a previous run left it.
func seedMember(s *memStore, member string, value, epoch int64) {
	s.members[member] = [2]int64{value, epoch}
}

// 1. A metastore that ignores the skip list returns a full batch of skipped
// events, all below its current id: the master must move past what it read
// only, not jump to the current id over the kept events behind them.
func TestMasterSkipListIgnoredLosesNoEvent(t *testing.T) {
	t.Parallel()
	log := &memLog{ignoreSkip: true}
	log.add("ALTER_TABLE", 1)
	store := newMemStore()
	store.commitAs(1, 0)
	seedMember(store, "m0", 1, 0)
	log.add("OPEN_TXN", 3)
	log.add("ALTER_TABLE", 2) // 5, 6
	skip := []string{"OPEN_TXN"}
	r := newRig(t, log, store, rigOpts{batch: 3, skip: skip})
	r.becomeMaster()
	r.run(10)
	r.checkFEHoldsLog(1, skip)
	if store.cursor != 6 {
		t.Fatalf("committed %d; want the metastore's current id 6", store.cursor)
	}
}

func TestFollowerSkipListIgnoredLosesNoEvent(t *testing.T) {
	t.Parallel()
	log := &memLog{ignoreSkip: true}
	log.add("ALTER_TABLE", 1)
	log.add("OPEN_TXN", 3)
	log.add("ALTER_TABLE", 2)
	store := newMemStore()
	store.commitAs(6, 0)
	seedMember(store, "f", 1, 0)
	skip := []string{"OPEN_TXN"}
	r := newRig(t, log, store, rigOpts{batch: 3, skip: skip, member: "f"})
	r.run(10)
	r.checkFEHoldsLog(1, skip)
	if r.l.cursor.Value() != 6 {
		t.Fatalf("follower at %d; want the master cursor 6", r.l.cursor.Value())
	}
}

// 2. m0 stopped at x; m1 handled a log reset and committed k < x in a new
// epoch; the new log grew past x; m0 returns as master. Its durable x belongs
// to the old log: it must neither be committed nor applied from.
func TestStaleDurableCursorAfterResetIsNotCommitted(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 15) // the new log, already past the old cursor 10
	store := newMemStore()
	store.commitAs(10, 0)
	store.commitAs(3, 1) // m1's rewind into epoch 1
	seedMember(store, "m0", 10, 0)
	r := newRig(t, log, store, rigOpts{})
	r.becomeMaster()
	r.run(10)
	if r.fe.refreshes() != 1 {
		t.Fatalf("FE full refreshes = %d; want 1 (its cursor belongs to the old log)", r.fe.refreshes())
	}
	if store.cursor != 15 || store.epoch != 1 {
		t.Fatalf("committed %d at epoch %d; want 15 at epoch 1", store.cursor, store.epoch)
	}
	r.checkFEHoldsLog(-1, nil)
	if v := store.members["m0"]; v != [2]int64{15, 1} {
		t.Fatalf("m0's durable cursor = %v; want 15 at epoch 1", v)
	}
}

// 3. A follower that was busy or restarted while the master handled a log reset
// finds the master cursor already past its own: the epoch tells it the new log
// is no continuation of the old one.
func TestFollowerNoticesResetItNeverSaw(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 35)
	store := newMemStore()
	store.commitAs(30, 0)
	store.commitAs(35, 1)
	seedMember(store, "f", 30, 0)
	r := newRig(t, log, store, rigOpts{member: "f"})
	r.run(10)
	if r.fe.refreshes() != 1 || r.l.cursor.Value() != 35 || r.l.cursor.Epoch() != 1 {
		t.Fatalf("refreshes %d, own %d@%d; want one refresh, 35 at epoch 1", r.fe.refreshes(), r.l.cursor.Value(), r.l.cursor.Epoch())
	}
}

// 4. An operator's `cursor reset` is seen by a follower that was mid-apply only
// after the master refreshed and committed on top of the -1.
func TestFollowerNoticesOperatorResetItNeverSaw(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 25)
	store := newMemStore()
	store.commitAs(20, 0)
	seedMember(store, "f", 20, 0)
	r := newRig(t, log, store, rigOpts{member: "f"})
	r.run(5)
	store.operatorSet(-1)
	store.commitAs(25, store.epoch) // the master's refresh and commit
	r.run(5)
	if r.fe.refreshes() != 1 {
		t.Fatalf("FE full refreshes = %d; want 1 for the operator's reset", r.fe.refreshes())
	}
}

// 5. With a metastore that honours the skip list, a follower's read of
// "master - own" events would count only kept ones and go past the master.
func TestFollowerNeverReadsPastMasterWithSkipList(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	for range 10 {
		log.add("OPEN_TXN", 1)
		log.add("ALTER_TABLE", 1)
	}
	store := newMemStore()
	store.commitAs(8, 0)
	seedMember(store, "f", 0, 0)
	skip := []string{"OPEN_TXN"}
	r := newRig(t, log, store, rigOpts{member: "f", skip: skip})
	r.run(10)
	if len(log.served) == 0 {
		t.Fatal("the metastore served no read: the check says nothing")
	}
	for _, hi := range log.served {
		if hi > 8 {
			t.Fatalf("the metastore served the follower events up to %d; the master cursor is 8", hi)
		}
	}
	if r.l.cursor.Value() != 8 {
		t.Fatalf("follower at %d; want 8", r.l.cursor.Value())
	}
}

// 5b. A follower that was paused across a log reset resumes with the old log's
// master cursor still queued in its watch. It must act on the cursor etcd holds
// now, not on the queued one.
func TestFollowerResumingFromPauseIgnoresQueuedMasterCursor(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 35) // the new log
	store := newMemStore()
	store.commitAs(313, 0)
	store.commitAs(35, 1)
	seedMember(store, "f", 30, 0)
	r := newRig(t, log, store, rigOpts{member: "f"})
	r.showWatch(cursorstore.Cursor{Value: 313, Exists: true, Rev: 1}) // queued before the pause
	if _, err := r.step(); err != nil {
		t.Fatal(err)
	}
	r.l.persistOwn(context.Background())
	for _, v := range store.memberWrites["f"] {
		if v > 35 {
			t.Fatalf("the follower wrote its cursor %d, above the committed master cursor 35 (writes %v)", v, store.memberWrites["f"])
		}
	}
	r.run(5)
	if r.fe.refreshes() != 1 {
		t.Fatalf("FE full refreshes = %d; want exactly 1", r.fe.refreshes())
	}
}

// 6. A new master still catching up (own < current < committed) must see that
// the log was reset: the committed cursor is part of what the log reached.
func TestCatchingUpMasterNoticesReset(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 12) // the new log: 12 < committed 20
	store := newMemStore()
	store.commitAs(20, 0)
	seedMember(store, "m0", 5, 0)
	r := newRig(t, log, store, rigOpts{})
	r.becomeMaster()
	r.run(10)
	if r.fe.refreshes() != 1 || store.cursor != 12 || store.epoch != 1 {
		t.Fatalf("refreshes %d, committed %d@%d; want one refresh and 12 at epoch 1", r.fe.refreshes(), store.cursor, store.epoch)
	}
}

// 6b. The log is reset between the master's read of the current id and its
// fetch: the refresh is as of the id the fetch saw in the new log, not the
// old log's id read before.
func TestMasterResetSeenByFetchUsesTheFetchsCurrentID(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 15)
	store := newMemStore()
	store.commitAs(10, 0)
	seedMember(store, "m0", 10, 0)
	r := newRig(t, log, store, rigOpts{})
	r.becomeMaster()
	log.afterCurrent = func(m *memLog) {
		m.mu.Lock()
		m.events = nil
		m.mu.Unlock()
		m.add("ALTER_TABLE", 3)
	}
	r.run(10)
	if store.cursor != 3 || store.epoch != 1 {
		t.Fatalf("committed %d at epoch %d; want the new log's 3 at epoch 1", store.cursor, store.epoch)
	}
	if _, at := r.fe.eventsSinceRefresh(); at != 3 {
		t.Fatalf("FE refreshed as of %d; want 3", at)
	}
}

// 7. An FE that restarted empty reports nothing applied: its member brings it
// back with a full refresh instead of sending the next batch; one restored
// from an older state is replayed from its own id.
func TestFERestartedEmptyIsRefreshed(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 10)
	store := newMemStore()
	store.commitAs(10, 0)
	seedMember(store, "f", 10, 0)
	r := newRig(t, log, store, rigOpts{member: "f", report: true})
	r.fe.applied = 10
	r.run(5)
	log.add("ALTER_TABLE", 5)
	store.commitAs(15, 0)
	r.fe.mu.Lock()
	r.fe.applied = -1 // restarted empty
	r.fe.mu.Unlock()
	r.run(10)
	if r.fe.refreshes() != 1 {
		t.Fatalf("FE full refreshes = %d; want 1 after it lost its state", r.fe.refreshes())
	}
	if st := r.a.Status().Catalogs[0]; st.FEApplied == nil || *st.FEApplied != 15 || st.Cursor != 15 {
		t.Fatalf("/status = %+v; want the FE at 15 after the refresh, beside the member's cursor 15", st)
	}
}

func TestFERestoredFromOlderStateIsReplayed(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 10)
	store := newMemStore()
	store.commitAs(10, 0)
	seedMember(store, "f", 10, 0)
	r := newRig(t, log, store, rigOpts{member: "f", report: true})
	r.fe.applied = 7 // restored from a snapshot taken at event 7
	log.add("ALTER_TABLE", 2)
	store.commitAs(12, 0)
	r.run(10)
	got, at := r.fe.eventsSinceRefresh()
	if at != -1 || len(got) != 5 || got[0] != 8 || got[4] != 12 {
		t.Fatalf("FE received %v (refresh at %d); want events 8-12 replayed, no refresh", got, at)
	}
}

// An upgraded cluster (no epoch keys anywhere) resumes without a refresh.
func TestUpgradeFromBeforeEpochsResumes(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 12)
	store := newMemStore()
	store.rev++
	store.cursor, store.cursorRev = 10, store.rev // no epoch key
	seedMember(store, "m0", 10, 0)
	r := newRig(t, log, store, rigOpts{})
	r.becomeMaster()
	r.run(10)
	if r.fe.refreshes() != 0 || store.cursor != 12 || store.epoch != 0 || store.epochRev == 0 {
		t.Fatalf("refreshes %d, committed %d@%d (epoch rev %d); want no refresh, 12 at epoch 0 with the epoch key written",
			r.fe.refreshes(), store.cursor, store.epoch, store.epochRev)
	}
}

// A metastore whose db uuid changed is a new log even though its current id
// is above the cursor.
func TestMetastoreIdentityChangeStartsNewEpoch(t *testing.T) {
	t.Parallel()
	log := &memLog{uuid: "u1"}
	log.add("ALTER_TABLE", 5)
	store := newMemStore()
	seedMember(store, "m0", 5, 0)
	store.commitAs(5, 0)
	r := newRig(t, log, store, rigOpts{})
	r.becomeMaster()
	r.run(5)
	if store.uuid != "u1" {
		t.Fatalf("recorded metastore %q; want u1 recorded by the first commit", store.uuid)
	}
	log.reset(9, "u2") // a restored database, ids above the cursor
	r.run(10)
	if r.fe.refreshes() != 1 || store.epoch != 1 || store.uuid != "u2" || store.cursor != 9 {
		t.Fatalf("refreshes %d, committed %d@%d of %q; want one refresh, 9 at epoch 1 of u2",
			r.fe.refreshes(), store.cursor, store.epoch, store.uuid)
	}
}

// An operator lowering the cursor starts a new epoch: the master continues
// after the value without a refresh, a follower full-refreshes.
func TestOperatorLoweringCursor(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 20)
	store := newMemStore()
	store.commitAs(20, 0)
	seedMember(store, "m0", 20, 0)
	seedMember(store, "f", 20, 0)
	m := newRig(t, log, store, rigOpts{})
	m.becomeMaster()
	m.run(5)
	f := newRig(t, log, store, rigOpts{member: "f"})
	f.run(5)
	store.operatorSet(15)
	m.run(10)
	if m.fe.refreshes() != 0 || store.cursor != 20 || store.epoch != 1 {
		t.Fatalf("master: refreshes %d, committed %d@%d; want no refresh, 20 at epoch 1", m.fe.refreshes(), store.cursor, store.epoch)
	}
	if got, _ := m.fe.eventsSinceRefresh(); len(got) != 5 || got[0] != 16 {
		t.Fatalf("master's FE received %v; want events 16-20 again", got)
	}
	f.run(10)
	if f.fe.refreshes() != 1 || f.l.cursor.Epoch() != 1 {
		t.Fatalf("follower: refreshes %d, epoch %d; want one refresh into epoch 1", f.fe.refreshes(), f.l.cursor.Epoch())
	}
}

// The fenced commit refuses a member of a stale term; the master then steps
// down and stops writing.
func TestMasterOfStaleTermStopsWriting(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 5)
	store := newMemStore()
	seedMember(store, "m0", 2, 0)
	store.commitAs(2, 0)
	r := newRig(t, log, store, rigOpts{scope: applier.ScopeCluster})
	r.becomeMaster()
	store.mu.Lock()
	store.leader.Rev++ // another member won a newer term
	store.mu.Unlock()
	r.showCommitted()
	_, err := r.step()
	if err == nil || classify(err) != classRoleLost {
		t.Fatalf("step of a stale term: %v; want the role lost", err)
	}
	if store.cursor != 2 {
		t.Fatalf("committed %d; want 2 untouched", store.cursor)
	}
	if _, master := r.el.Current(); master {
		t.Fatal("the member still holds the role after a refused commit")
	}
}

// An FE whose state answer cannot be read is applied to anyway: the check must
// not turn into a self-heal on every step.
func TestFEStateUnreadableDoesNotSelfHeal(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 10)
	store := newMemStore()
	store.commitAs(12, 0)
	log.add("ALTER_TABLE", 2)
	seedMember(store, "f", 10, 0)
	r := newRig(t, log, store, rigOpts{member: "f", report: true})
	r.fe.askErr = &applier.Error{Class: applier.Deterministic, Err: errors.New("unreadable answer: <html>")}
	r.run(5)
	if got, _ := r.fe.eventsSinceRefresh(); r.fe.refreshes() != 0 || len(got) != 2 {
		t.Fatalf("FE got %d refreshes and events %v; want events 11-12 and no refresh", r.fe.refreshes(), got)
	}
}

// Each class of FE failure does what SPEC §2 says, in one step: transient
// ones keep the cursor and back off; deterministic ones self-heal (cursor -1:
// the next step full-refreshes); credentials and configuration errors keep the
// cursor, are loud (/readyz) and retry slowly.
func TestFailureClassesOfAnApply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		class                         applier.Class
		wantOwn                       int64
		wantAuth, wantConfig, notSlow bool
	}{
		{applier.Transient, 10, false, false, true},
		{applier.Deterministic, -1, false, false, true},
		{applier.Auth, 10, true, false, false},
		{applier.Configuration, 10, false, true, false},
	} {
		t.Run(tc.class.String(), func(t *testing.T) {
			log := &memLog{}
			log.add("ALTER_TABLE", 12)
			store := newMemStore()
			store.commitAs(12, 0)
			seedMember(store, "f", 10, 0)
			r := newRig(t, log, store, rigOpts{member: "f"})
			r.l.retry = Retry{Initial: time.Millisecond, Max: 2 * time.Millisecond, AuthInterval: time.Hour}
			r.fe.failNext = &applier.Error{Class: tc.class, Err: errors.New("the FE said no")}
			r.showCommitted()
			_, err := r.step()
			if err == nil {
				t.Fatal("the step succeeded although the FE refused the batch")
			}
			wait := r.l.failed(err, newBackoff(r.l.retry))
			st := r.a.Status().Catalogs[0]
			if r.l.cursor.Value() != tc.wantOwn || st.AuthFailing != tc.wantAuth || st.ConfigFailing != tc.wantConfig {
				t.Fatalf("after a %s failure: cursor %d, auth_failing %v, config_failing %v; want %d, %v, %v",
					tc.class, r.l.cursor.Value(), st.AuthFailing, st.ConfigFailing, tc.wantOwn, tc.wantAuth, tc.wantConfig)
			}
			if slow := wait >= 30*time.Minute; slow == tc.notSlow {
				t.Fatalf("after a %s failure the loop waits %s", tc.class, wait)
			}
			ready := len(r.a.notReady()) == 0
			if (tc.wantAuth || tc.wantConfig) && ready {
				t.Fatalf("/readyz ready after a %s failure", tc.class)
			}
			r.run(5)
			if got, _ := r.fe.eventsSinceRefresh(); tc.class != applier.Deterministic && len(got) != 2 {
				t.Fatalf("after the %s failure cleared the FE got %v; want events 11-12", tc.class, got)
			}
			if tc.class == applier.Deterministic && r.fe.refreshes() != 1 {
				t.Fatalf("a deterministic failure led to %d full refreshes; want 1 (self-heal)", r.fe.refreshes())
			}
		})
	}
}

// A fenced commit that conflicts with an operator's write makes the master
// read the cursor again and adopt the operator's value rather than commit
// over it.
func TestMasterAdoptsOperatorRaise(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 60)
	store := newMemStore()
	store.commitAs(10, 0)
	seedMember(store, "m0", 10, 0)
	r := newRig(t, log, store, rigOpts{batch: 5, scope: applier.ScopeLocal})
	r.becomeMaster()
	r.showCommitted()
	first := int64(10 + 5*localDrainFetches)
	if _, err := r.step(); err != nil { // applies 11 to first, commits first
		t.Fatal(err)
	}
	if store.cursor != first {
		t.Fatalf("committed %d after the first step; want %d", store.cursor, first)
	}
	store.operatorSet(first + 15)
	r.run(10)
	got, _ := r.fe.eventsSinceRefresh()
	for _, id := range got {
		if id > first && id <= first+15 {
			t.Fatalf("the master applied event %d, which the operator's raise to %d skips (applied %v)", id, first+15, got)
		}
	}
	if store.cursor != 60 || store.epoch != 0 || r.fe.refreshes() != 0 {
		t.Fatalf("committed %d@%d with %d refreshes; want 60 at epoch 0 and no refresh", store.cursor, store.epoch, r.fe.refreshes())
	}
}

// The master of a local-scope dialect asks its own FE too, before it applies
// the next batch: an FE restarted empty gets a full refresh, not the batch.
func TestMasterRefreshesItsFERestartedEmpty(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 10)
	store := newMemStore()
	store.commitAs(10, 0)
	seedMember(store, "m0", 10, 0)
	r := newRig(t, log, store, rigOpts{report: true})
	r.fe.applied = 10
	r.becomeMaster()
	r.run(5)
	r.fe.mu.Lock()
	r.fe.applied = -1 // restarted empty
	r.fe.mu.Unlock()
	log.add("ALTER_TABLE", 3)
	r.run(10)
	if r.fe.refreshes() != 1 || store.cursor != 13 {
		t.Fatalf("FE full refreshes %d, committed %d; want 1 refresh and 13 committed", r.fe.refreshes(), store.cursor)
	}
}
