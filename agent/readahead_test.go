package agent

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms/message"
)

// Unit tests of the read-ahead (readahead.go): the next batch is read while the
// current one is applied, and nothing is ever applied or committed out of
// order, nor from a read-ahead of another role, term or epoch.

// changeBatches are the FE's batches of changes (no full refreshes) as
// (from, to] pairs, in the order it received them.
func changeBatches(fe *memFE) [][2]int64 {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	var out [][2]int64
	for _, b := range fe.batches {
		if !b.FullRefresh {
			out = append(out, [2]int64{b.From, b.To})
		}
	}
	return out
}

// checkInOrder fails unless each batch starts where the one before ended.
func checkInOrder(t *testing.T, bs [][2]int64) {
	t.Helper()
	for i := 1; i < len(bs); i++ {
		if bs[i][0] != bs[i-1][1] {
			t.Fatalf("batches out of order: %v (batch %d starts at %d, the one before ended at %d)", bs, i, bs[i][0], bs[i-1][1])
		}
	}
}

// fetchesAfter counts the fetches asked from after (serverSkip: with the skip list).
func fetchesAfter(log *memLog, after int64, serverSkip bool) int {
	log.mu.Lock()
	defer log.mu.Unlock()
	n := 0
	for _, f := range log.fetches {
		if f.after == after && f.serverSkip == serverSkip {
			n++
		}
	}
	return n
}

// gathered is how many events a local-scope master applies and commits as one
// batch while it drains a backlog in fetches of 10 (localDrainFetches fetches).
const gathered = localDrainFetches * 10

// awaitFetchDuringApply makes the FE hold each batch ending at to, below cur,
// until the metastore has answered the fetch after to+ahead (fetches of 10):
// with ahead 0 the proof that the next batch is read while this one is
// applied, with ahead 10 that the fetch after that one is read too. It fails
// the test if that fetch does not come within a bound (a read-ahead that does
// not overlap never comes).
func awaitFetchDuringApply(t *testing.T, log *memLog, fe *memFE, cur, ahead int64) {
	t.Helper()
	answered := map[int64]chan struct{}{}
	for id := int64(0); id <= cur; id++ {
		answered[id] = make(chan struct{})
	}
	log.onFetch = func(c fetchCall) {
		if ch, ok := answered[c.after]; ok {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	}
	fe.beforeApply = func(b change.Batch) error {
		if b.FullRefresh || b.To+ahead >= cur {
			return nil
		}
		select {
		case <-answered[b.To+ahead]:
		case <-time.After(10 * time.Second):
			t.Errorf("batch (%d, %d] was applied and the events after %d were never read meanwhile", b.From, b.To, b.To+ahead)
		}
		return nil
	}
}

func TestMasterReadsTheNextBatchWhileApplyingAndCommitsInOrder(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(0, 0)
	seedMember(store, "m0", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10})
	awaitFetchDuringApply(t, log, r.fe, 3*gathered, 0)
	r.becomeMaster()
	r.run(10)
	if got, want := changeBatches(r.fe), [][2]int64{{0, gathered}, {gathered, 2 * gathered}, {2 * gathered, 3 * gathered}}; !slices.Equal(got, want) {
		t.Fatalf("FE batches %v; want %v", got, want)
	}
	if want := []int64{gathered, 2 * gathered, 3 * gathered}; !slices.Equal(store.committed, want) {
		t.Fatalf("commits %v; want %v", store.committed, want)
	}
	for after := int64(0); after < 3*gathered; after += 10 {
		if n := fetchesAfter(log, after, false); n != 1 {
			t.Errorf("%d fetches after %d; want 1 (each read-ahead taken, nothing read twice)", n, after)
		}
	}
	r.checkFEHoldsLog(0, nil)
}

func TestFollowerReadsTheNextBatchWhileApplying(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(3*gathered, 0)
	seedMember(store, "f", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10, member: "f"})
	awaitFetchDuringApply(t, log, r.fe, 3*gathered, 0)
	r.run(10)
	if got, want := changeBatches(r.fe), [][2]int64{{0, gathered}, {gathered, 2 * gathered}, {2 * gathered, 3 * gathered}}; !slices.Equal(got, want) {
		t.Fatalf("FE batches %v; want %v", got, want)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.fetches) != 3*gathered/10 {
		t.Fatalf("fetches %v; want %d, one per 10 events", log.fetches, 3*gathered/10)
	}
}

// newDrainRig is a rig in which member, the master ("m0") or a follower ("f"),
// drains events from 0: its cursor and the committed one at 0 for the master,
// the committed one at events for a follower. opts.member is set to member.
func newDrainRig(t *testing.T, log *memLog, member string, events int64, opts rigOpts) *rig {
	t.Helper()
	store := newMemStore()
	if member == "f" {
		store.commitAs(events, 0)
	} else {
		store.commitAs(0, 0)
	}
	seedMember(store, member, 0, 0)
	opts.member = member
	r := newRig(t, log, store, opts)
	if member == "m0" {
		r.becomeMaster()
	}
	return r
}

// Draining a backlog, the fetch after the next batch's first is read while a
// batch is applied (and, by the master, committed), so that the metastore is
// not left waiting for the apply, the commit and the next step's calls; it is
// then taken by the next step, each fetch read once, every batch applied and
// committed in order.
func TestNextBatchSecondFetchReadWhileApplying(t *testing.T) {
	t.Parallel()
	for _, member := range []string{"m0", "f"} {
		t.Run(member, func(t *testing.T) {
			t.Parallel()
			log := &memLog{}
			log.add("ALTER_TABLE", 3*gathered)
			r := newDrainRig(t, log, member, 3*gathered, rigOpts{batch: 10})
			awaitFetchDuringApply(t, log, r.fe, 3*gathered, 10)
			r.run(10)
			if got, want := changeBatches(r.fe), [][2]int64{{0, gathered}, {gathered, 2 * gathered}, {2 * gathered, 3 * gathered}}; !slices.Equal(got, want) {
				t.Fatalf("FE batches %v; want %v", got, want)
			}
			if want := []int64{gathered, 2 * gathered, 3 * gathered}; member == "m0" && !slices.Equal(r.store.committed, want) {
				t.Fatalf("commits %v; want %v", r.store.committed, want)
			}
			for after := int64(0); after < 3*gathered; after += 10 {
				if n := fetchesAfter(log, after, false); n != 1 {
					t.Errorf("%d fetches after %d; want 1 (each read-ahead taken, nothing read twice)", n, after)
				}
			}
		})
	}
}

// An event that cannot be decoded in the read-ahead fails the step that takes
// it, after the batch before it was applied and committed: in order, as if
// the step had read it itself; it is counted once.
func TestReadAheadPoisonIsMetInOrder(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", gathered)
	log.add("POISON", 1)
	log.add("ALTER_TABLE", 9)
	store := newMemStore()
	store.commitAs(0, 0)
	seedMember(store, "m0", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10})
	r.becomeMaster()
	r.showCommitted()
	if out, err := r.step(); err != nil || out != again {
		t.Fatalf("first step: %v, %v; want again", out, err)
	}
	if !r.l.ahead.inFlight() {
		t.Fatal("no read-ahead after a batch with more events behind it")
	}
	r.showCommitted()
	_, err := r.step()
	var p *poisonError
	if !errors.As(err, &p) || p.eventID != gathered+1 {
		t.Fatalf("second step: %v; want the poison event %d", err, gathered+1)
	}
	if got := changeBatches(r.fe); !slices.Equal(got, [][2]int64{{0, gathered}}) || store.cursor != gathered {
		t.Fatalf("FE batches %v, committed %d; want (0, %d] applied and committed before the poison event was met", got, store.cursor, gathered)
	}
	var failedCount dto.Metric
	if err := r.a.m.eventsFailed.WithLabelValues("hive", eventTypeLabel("POISON")).Write(&failedCount); err != nil {
		t.Fatal(err)
	}
	if n := failedCount.GetCounter().GetValue(); n != 1 {
		t.Fatalf("events failed = %v; want 1", n)
	}
}

// A batch whose apply fails is done again; the read-ahead started behind it is
// discarded and nothing after it is applied or committed first.
func TestReadAheadDiscardedWhenTheApplyFails(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(0, 0)
	seedMember(store, "m0", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10})
	failed := false
	r.fe.beforeApply = func(b change.Batch) error {
		if b.To == 2*gathered && !failed {
			failed = true
			return errors.New("FE answered 503")
		}
		return nil
	}
	r.becomeMaster()
	for i := 0; i < 10; i++ {
		r.showCommitted()
		out, err := r.step()
		if err == nil && out != again {
			break
		}
		if err != nil && r.l.ahead.inFlight() {
			t.Fatalf("step failed (%v) and its read-ahead is still held", err)
		}
	}
	if !failed {
		t.Fatal("the apply never failed: the test says nothing")
	}
	got := changeBatches(r.fe)
	checkInOrder(t, got)
	if want := [][2]int64{{0, gathered}, {gathered, 2 * gathered}, {2 * gathered, 3 * gathered}}; !slices.Equal(got, want) {
		t.Fatalf("FE batches %v; want %v", got, want)
	}
	if want := []int64{gathered, 2 * gathered, 3 * gathered}; !slices.Equal(store.committed, want) {
		t.Fatalf("commits %v; want %v", store.committed, want)
	}
}

// A master's read-ahead is not a follower's: after the role is lost the
// follower reads for itself (without the skip list, never past the master
// cursor).
func TestReadAheadDiscardedOnRoleChange(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(0, 0)
	seedMember(store, "m0", 0, 0)
	skip := []string{"OPEN_TXN"}
	r := newRig(t, log, store, rigOpts{batch: 10, skip: skip})
	r.becomeMaster()
	r.showCommitted()
	if out, err := r.step(); err != nil || out != again {
		t.Fatalf("master step: %v, %v; want again", out, err)
	}
	if !r.l.ahead.inFlight() || !r.l.ahead.ahead.key.master() {
		t.Fatal("no master read-ahead after a batch with more events behind it")
	}
	r.el.StepDown("test")
	r.run(5) // the follower waits: the master cursor is its own, gathered
	if r.l.ahead.inFlight() {
		t.Fatal("the master's read-ahead is still held by the follower")
	}
	store.commitAs(gathered+15, 0) // another master moved on
	r.run(10)
	if n := fetchesAfter(log, gathered, false); n != 1 {
		t.Fatalf("%d follower fetches after %d without the skip list; want 1 (its own read)", n, gathered)
	}
	got := changeBatches(r.fe)
	checkInOrder(t, got)
	if want := [][2]int64{{0, gathered}, {gathered, gathered + 15}}; !slices.Equal(got, want) {
		t.Fatalf("FE batches %v; want %v", got, want)
	}
}

// A new term does not take the read-ahead of the term before it.
func TestReadAheadDiscardedOnNewTerm(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(0, 0)
	seedMember(store, "m0", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10})
	r.becomeMaster()
	r.showCommitted()
	if _, err := r.step(); err != nil || !r.l.ahead.inFlight() {
		t.Fatalf("master step: %v, read-ahead %v; want one started", err, r.l.ahead.inFlight())
	}
	r.becomeMaster() // lost and won again: a new token
	r.run(10)
	if n := fetchesAfter(log, gathered, false); n != 2 {
		t.Fatalf("%d fetches after %d; want 2 (the old term's read-ahead, then the new term's own read)", n, gathered)
	}
	checkInOrder(t, changeBatches(r.fe))
	if want := []int64{gathered, 2 * gathered, 3 * gathered}; !slices.Equal(store.committed, want) {
		t.Fatalf("commits %v; want %v", store.committed, want)
	}
	r.checkFEHoldsLog(0, nil)
}

// An operator lowering the cursor starts a new epoch: the master continues
// after the operator's value, not from its read-ahead of the old lineage.
func TestMasterReadAheadDiscardedOnEpochChange(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(0, 0)
	seedMember(store, "m0", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10})
	r.becomeMaster()
	r.showCommitted()
	if _, err := r.step(); err != nil || !r.l.ahead.inFlight() {
		t.Fatalf("master step: %v, read-ahead %v; want one started", err, r.l.ahead.inFlight())
	}
	store.operatorSet(5)
	r.run(10)
	got := changeBatches(r.fe)
	if want := [][2]int64{{0, gathered}, {5, gathered + 5}, {gathered + 5, 2*gathered + 5}, {2*gathered + 5, 3 * gathered}}; !slices.Equal(got, want) {
		t.Fatalf("FE batches %v; want %v (after the operator's 5, not from the read-ahead after the first batch)", got, want)
	}
	if store.epoch != 1 || store.cursor != 3*gathered {
		t.Fatalf("committed %d@%d; want %d at epoch 1", store.cursor, store.epoch, 3*gathered)
	}
}

// A follower that read ahead in the old log and then finds a new epoch
// committed (the master handled a log reset) full-refreshes and applies
// nothing it read ahead.
func TestFollowerReadAheadDiscardedOnEpochChange(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(3*gathered, 0)
	seedMember(store, "f", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10, member: "f"})
	r.showCommitted()
	if _, err := r.step(); err != nil || !r.l.ahead.inFlight() {
		t.Fatalf("follower step: %v, read-ahead %v; want one started", err, r.l.ahead.inFlight())
	}
	log.reset(25, "")
	store.commitAs(25, 1)
	r.run(10)
	if r.fe.refreshes() != 1 {
		t.Fatalf("FE full refreshes %d; want 1", r.fe.refreshes())
	}
	if got, at := r.fe.eventsSinceRefresh(); len(got) != 0 || at != 25 {
		t.Fatalf("after the refresh as of %d the FE received %v; want a refresh as of 25 and nothing of the old log", at, got)
	}
	if r.l.ahead.inFlight() {
		t.Fatal("a read-ahead is still held")
	}
}

// A follower's read-ahead stops at the master cursor it started under even
// where the log has a hole in its ids, and the next step, under a higher
// master cursor, moves only as far as that read went: the events beyond it
// are still applied.
func TestFollowerReadAheadNeverMovesPastWhatItKept(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", gathered+2)
	for id := int64(gathered + 7); id <= gathered+30; id++ { // the next four ids never existed
		log.events = append(log.events, message.Event{ID: id, Type: "ALTER_TABLE", DB: "db", Table: fmt.Sprintf("t%d", id)})
	}
	store := newMemStore()
	store.commitAs(gathered+9, 0)
	seedMember(store, "f", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10, member: "f"})
	r.showCommitted()
	// Reads 1 to gathered in four fetches, and ahead 9 events after them:
	// the two before the hole and 7 after it, of which the last 4 are above
	// the master cursor.
	if _, err := r.step(); err != nil || !r.l.ahead.inFlight() {
		t.Fatalf("follower step: %v, read-ahead %v; want one started", err, r.l.ahead.inFlight())
	}
	store.commitAs(gathered+30, 0) // the master moves on before the next step
	r.run(10)
	if r.l.cursor.Value() != gathered+30 || r.fe.refreshes() != 0 {
		t.Fatalf("follower at %d after %d full refreshes; want %d without one", r.l.cursor.Value(), r.fe.refreshes(), gathered+30)
	}
	checkInOrder(t, changeBatches(r.fe))
	r.checkFEHoldsLog(0, nil)
	got, _ := r.fe.eventsSinceRefresh()
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("FE received events out of order: %v", got)
		}
	}
}

// A doris master gathering a backlog into one batch decodes each fetch while
// the next one is in flight, and still applies one batch, in order.
func TestClusterMasterDecodesAFetchWhileTheNextIsRead(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 30)
	store := newMemStore()
	store.commitAs(0, 0)
	seedMember(store, "m0", 0, 0)
	answered := map[int64]chan struct{}{10: make(chan struct{}), 20: make(chan struct{})}
	log.onFetch = func(c fetchCall) {
		if ch, ok := answered[c.after]; ok {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	}
	dec := hookDecoder{before: func(ev message.Event) {
		// The first event of the fetches after 0 and after 10: the fetch
		// after them must be answered while they are decoded.
		next := map[int64]int64{1: 10, 11: 20}[ev.ID]
		if next == 0 {
			return
		}
		select {
		case <-answered[next]:
		case <-time.After(10 * time.Second):
			t.Errorf("event %d was decoded and the fetch after %d was never read meanwhile", ev.ID, next)
		}
	}}
	r := newRig(t, log, store, rigOpts{batch: 10, scope: applier.ScopeCluster, decoder: dec})
	r.becomeMaster()
	r.run(10)
	if got, want := changeBatches(r.fe), [][2]int64{{0, 30}}; !slices.Equal(got, want) {
		t.Fatalf("FE batches %v; want one gathered batch %v", got, want)
	}
	if want := []int64{30}; !slices.Equal(store.committed, want) {
		t.Fatalf("commits %v; want %v", store.committed, want)
	}
	for _, after := range []int64{0, 10, 20} {
		if n := fetchesAfter(log, after, false); n != 1 {
			t.Errorf("%d fetches after %d; want 1", n, after)
		}
	}
	r.checkFEHoldsLog(0, nil)
}

// nextFetchDuringDecode returns a decoder, for a log of cur events read in
// fetches of 10, that holds the first event of each fetch but the last until
// the fetch after the one it belongs to has been answered: the proof that the
// next fetch is in flight while a fetch is decoded (against a real metastore
// the fetch is most of a step, and starting the next one only after the decode
// leaves the metastore waiting), within a batch and from one batch to the next.
func nextFetchDuringDecode(t *testing.T, log *memLog, cur int64) hookDecoder {
	answered := map[int64]chan struct{}{}
	next := map[int64]int64{} // the first event of a fetch -> the end of that fetch
	for end := int64(10); end < cur; end += 10 {
		answered[end] = make(chan struct{})
		next[end-9] = end
	}
	log.onFetch = func(c fetchCall) {
		if ch, ok := answered[c.after]; ok {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	}
	return hookDecoder{before: func(ev message.Event) {
		end, ok := next[ev.ID]
		if !ok {
			return
		}
		select {
		case <-answered[end]:
		case <-time.After(10 * time.Second):
			t.Errorf("event %d was decoded and the fetch after %d was never read meanwhile", ev.ID, end)
		}
	}}
}

func TestMasterFetchesTheNextBatchWhileDecoding(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(0, 0)
	seedMember(store, "m0", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10, decoder: nextFetchDuringDecode(t, log, 3*gathered)})
	r.becomeMaster()
	r.run(10)
	if got, want := changeBatches(r.fe), [][2]int64{{0, gathered}, {gathered, 2 * gathered}, {2 * gathered, 3 * gathered}}; !slices.Equal(got, want) {
		t.Fatalf("FE batches %v; want %v", got, want)
	}
	if want := []int64{gathered, 2 * gathered, 3 * gathered}; !slices.Equal(store.committed, want) {
		t.Fatalf("commits %v; want %v", store.committed, want)
	}
	for after := int64(0); after < 3*gathered; after += 10 {
		if n := fetchesAfter(log, after, false); n != 1 {
			t.Errorf("%d fetches after %d; want 1 (each read-ahead taken, nothing read twice)", n, after)
		}
	}
	r.checkFEHoldsLog(0, nil)
}

func TestFollowerFetchesTheNextBatchWhileDecoding(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(3*gathered, 0)
	seedMember(store, "f", 0, 0)
	r := newRig(t, log, store, rigOpts{batch: 10, member: "f", decoder: nextFetchDuringDecode(t, log, 3*gathered)})
	r.run(10)
	if got, want := changeBatches(r.fe), [][2]int64{{0, gathered}, {gathered, 2 * gathered}, {2 * gathered, 3 * gathered}}; !slices.Equal(got, want) {
		t.Fatalf("FE batches %v; want %v", got, want)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.fetches) != 3*gathered/10 {
		t.Fatalf("fetches %v; want %d, one per 10 events", log.fetches, 3*gathered/10)
	}
}

// Events cleaned from the metastore while a follower gathers a batch: the fetch
// that meets the gap ends the batch, which is applied up to what was read
// before it; the next step meets the gap itself and refreshes once, and no
// event past the gap reaches the FE as a change.
func TestFollowerGatheringStopsAtAGap(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 3*gathered)
	store := newMemStore()
	store.commitAs(3*gathered, 0)
	seedMember(store, "f", 0, 0)
	var once sync.Once
	log.onFetch = func(c fetchCall) {
		if c.after != 0 {
			return
		}
		// The cleaner drops the oldest 25 events right after the first
		// fetch was answered: the second fetch (after 10) finds a gap.
		once.Do(func() {
			log.mu.Lock()
			defer log.mu.Unlock()
			log.events = slices.DeleteFunc(log.events, func(ev message.Event) bool { return ev.ID <= 25 })
		})
	}
	r := newRig(t, log, store, rigOpts{batch: 10, member: "f"})
	r.showCommitted()
	if _, err := r.step(); err != nil {
		t.Fatalf("first follower step: %v", err)
	}
	if got, want := changeBatches(r.fe), [][2]int64{{0, 10}}; !slices.Equal(got, want) || r.l.cursor.Value() != 10 || r.fe.refreshes() != 0 {
		t.Fatalf("after the first step: FE batches %v, cursor %d, %d full refreshes; want %v, 10, none", got, r.l.cursor.Value(), r.fe.refreshes(), want)
	}
	r.run(10)
	if r.l.cursor.Value() != 3*gathered || r.fe.refreshes() != 1 {
		t.Fatalf("follower at %d after %d full refreshes; want %d after one", r.l.cursor.Value(), r.fe.refreshes(), 3*gathered)
	}
	if got := changeBatches(r.fe); len(got) != 1 {
		t.Fatalf("FE batches %v; want only (0, 10] as changes, the rest by the refresh", got)
	}
}

// A member gathering a batch over several fetches keeps only the changes of
// the fetches it decoded: while it decodes one fetch, no more than two fetches'
// events are reachable (that one and the next, in flight), for the master and
// for a follower.
func TestGatheringHoldsAtMostTwoFetches(t *testing.T) {
	t.Parallel()
	for _, member := range []string{"m0", "f"} {
		t.Run(member, func(t *testing.T) {
			t.Parallel()
			log := &memLog{trackAnswers: true}
			log.add("ALTER_TABLE", 3*gathered)
			// Each fetch's first event waits until the next fetch was
			// answered, so the count includes the one in flight.
			wait := nextFetchDuringDecode(t, log, 3*gathered)
			var mu sync.Mutex
			most, checks := 0, 0
			dec := hookDecoder{before: func(ev message.Event) {
				wait.before(ev)
				if ev.ID%10 != 1 {
					return
				}
				n := log.liveAnswers()
				mu.Lock()
				defer mu.Unlock()
				most, checks = max(most, n), checks+1
			}}
			r := newDrainRig(t, log, member, 3*gathered, rigOpts{batch: 10, decoder: dec})
			r.run(10)
			if r.l.cursor.Value() != 3*gathered {
				t.Fatalf("cursor %d; want %d", r.l.cursor.Value(), 3*gathered)
			}
			mu.Lock()
			defer mu.Unlock()
			if checks != 3*gathered/10 || most > 2 {
				t.Fatalf("at most %d fetches' events reachable while a fetch was decoded (%d checks); want at most 2 (%d checks)", most, checks, 3*gathered/10)
			}
		})
	}
}

// The fetch chained after the next batch's first starts only once the step
// that started it has decoded every fetch of its own batch: a member still
// holds at most two fetches' events when each fetch is answered. The step's
// decode of its last event is held for a while (or until the chained fetch is
// answered), a window in which a chained fetch that did not wait would be
// read with three fetches held.
func TestChainedFetchWaitsForTheBatchToBeDecoded(t *testing.T) {
	t.Parallel()
	for _, member := range []string{"m0", "f"} {
		t.Run(member, func(t *testing.T) {
			t.Parallel()
			log := &memLog{trackAnswers: true}
			log.add("ALTER_TABLE", 3*gathered)
			chained := make(chan struct{}) // the fetch after gathered+10 was answered
			var mu sync.Mutex
			most, answers := 0, 0
			log.onFetch = func(c fetchCall) {
				n := log.liveAnswers()
				mu.Lock()
				most, answers = max(most, n), answers+1
				mu.Unlock()
				if c.after == gathered+10 {
					close(chained)
				}
			}
			dec := hookDecoder{before: func(ev message.Event) {
				if ev.ID != gathered {
					return
				}
				select {
				case <-chained:
				case <-time.After(200 * time.Millisecond):
				}
			}}
			r := newDrainRig(t, log, member, 3*gathered, rigOpts{batch: 10, decoder: dec})
			r.run(10)
			if r.l.cursor.Value() != 3*gathered {
				t.Fatalf("cursor %d; want %d", r.l.cursor.Value(), 3*gathered)
			}
			if n := fetchesAfter(log, gathered+10, false); n != 1 {
				t.Fatalf("%d fetches after %d; want 1", n, gathered+10)
			}
			mu.Lock()
			defer mu.Unlock()
			if answers != 3*gathered/10 || most > 2 {
				t.Fatalf("at most %d fetches' events reachable when a fetch was answered (%d answers); want at most 2 (%d answers)", most, answers, 3*gathered/10)
			}
		})
	}
}

// spreadDecoder tells, per fetch of perFetch events, whether the fetch was
// decoded on more than one goroutine: whether an event of the fetch started
// before its first event was done, which one goroutine decoding the fetch in
// order never does. The first event of each fetch waits for that to happen for
// up to wait(fetch): a window in which a fetch spread over goroutines shows it,
// whichever of them runs first.
type spreadDecoder struct {
	perFetch int64
	wait     func(fetch int64) time.Duration
	mu       sync.Mutex
	done     map[int64]bool          // the fetch's first event is done
	spread   map[int64]chan struct{} // closed once an event of the fetch started before its first was done
}

func (c *spreadDecoder) Decode(ev message.Event) ([]change.Descriptor, error) {
	fetch, first := (ev.ID-1)/c.perFetch, (ev.ID-1)%c.perFetch == 0
	c.mu.Lock()
	ch, ok := c.spread[fetch]
	if !ok {
		ch = make(chan struct{})
		c.spread[fetch] = ch
	}
	if !first && !c.done[fetch] {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	c.mu.Unlock()
	if first {
		select {
		case <-ch:
		case <-time.After(c.wait(fetch)):
		}
		c.mu.Lock()
		c.done[fetch] = true
		c.mu.Unlock()
	}
	return memDecoder{}.Decode(ev)
}

// spreadFetches lists whether each of n fetches was decoded on several goroutines.
func (c *spreadDecoder) spreadFetches(n int64) []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]bool, n)
	for f := range n {
		if ch, ok := c.spread[f]; ok {
			select {
			case <-ch:
				out[f] = true
			default:
			}
		}
	}
	return out
}

// Draining a backlog, a member decodes each fetch on one goroutine while the
// next is in flight (the fetch and the decode already keep two threads busy;
// more would take cores from the FE beside the sidecar and, in the benchmarks,
// from the metastore); the last fetch, with nothing in flight, is spread over
// its cores.
func TestDecodeOnOneGoroutineWhileAFetchIsInFlight(t *testing.T) {
	t.Parallel()
	const batch, fetches = 2 * minEventsPerDecoder, 2 * localDrainFetches
	for _, member := range []string{"m0", "f"} {
		t.Run(member, func(t *testing.T) {
			t.Parallel()
			log := &memLog{}
			log.add("ALTER_TABLE", batch*fetches)
			dec := &spreadDecoder{perFetch: batch, done: map[int64]bool{}, spread: map[int64]chan struct{}{},
				wait: func(fetch int64) time.Duration {
					if fetch == fetches-1 {
						return 10 * time.Second // must come
					}
					return 100 * time.Millisecond // must not
				}}
			r := newDrainRig(t, log, member, batch*fetches, rigOpts{batch: batch, decoder: dec})
			r.l.maxDecoders = 2
			r.run(10)
			if r.l.cursor.Value() != batch*fetches {
				t.Fatalf("cursor %d; want %d", r.l.cursor.Value(), batch*fetches)
			}
			want := make([]bool, fetches)
			want[fetches-1] = true
			if got := dec.spreadFetches(fetches); !slices.Equal(got, want) {
				t.Fatalf("fetches decoded on several goroutines %v; want only the last, with nothing in flight: %v", got, want)
			}
		})
	}
}
