package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/hmssync/hmssync/hms"
)

// A member whose open-transaction state knows nothing as of its cursor
// rebuilds it from a window of the log before the cursor (lookback.go).

// cleanThrough removes the events up to id, as the metastore's cleaner does.
func (m *memLog) cleanThrough(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.events) > 0 && m.events[0].ID <= id {
		m.events = m.events[1:]
	}
}

// failingLog is a memLog whose fetches after an id below below fail: the
// metastore refusing the look-back's reads while it serves the batches.
type failingLog struct {
	*memLog
	below int64
	mu    sync.Mutex
	fails int
}

func (f *failingLog) NextEvents(ctx context.Context, after int64, max int, skip []string) (hms.Fetch, error) {
	if after < f.below {
		f.mu.Lock()
		f.fails++
		f.mu.Unlock()
		return hms.Fetch{}, errors.New("metastore unavailable")
	}
	return f.memLog.NextEvents(ctx, after, max, skip)
}

// fetchesBelow counts the fetches asked after an id below id, and returns the
// lowest id any fetch was asked after (-1: none).
func (m *memLog) fetchesBelow(id int64) (n int, lowest int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lowest = -1
	for _, f := range m.fetches {
		if f.after < id {
			n++
		}
		if lowest < 0 || f.after < lowest {
			lowest = f.after
		}
	}
	return n, lowest
}

func (f *failingLog) failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fails
}

func (r *rig) unknownCommits() float64 {
	return metricValue(r.a.m.txnUnknownCommits.WithLabelValues("hive"))
}

// The seed's whole point is no full refresh: a read-only transaction (a query)
// and a writing one open across the seed cost none, and the writing one's
// table is refreshed in its commit's batch.
func TestLookbackSeededStartKnowsTheTransactionsOpenAcrossTheSeed(t *testing.T) {
	log := &memLog{}
	log.createTable("sales", "orders")
	log.openTxn(200) // a query: reads only
	log.openTxn(201)
	log.allocWriteID("sales", "orders", 201)
	store := newMemStore()
	store.seedAt(log.current(), "")
	r := newTxnRig(t, log, store, rigOpts{})
	r.becomeMaster()
	r.run(10)
	readOnly := log.commitTxn(200)
	commit := log.commitTxn(201)
	r.run(10)
	if n := r.fe.refreshes(); n != 0 || r.unknownCommits() != 0 {
		t.Fatalf("after the commits of transactions open across the seed: %d full refreshes, %v unknown commits; want none", n, r.unknownCommits())
	}
	if got, full, ok := r.fe.refreshedInBatchOf(commit); !ok || full || !slices.Equal(got, []string{"sales.orders"}) {
		t.Fatalf("the writing transaction's commit (event %d) refreshed %v (full %v, applied %v); want [sales.orders]", commit, got, full, ok)
	}
	if _, _, ok := r.fe.refreshedInBatchOf(readOnly); !ok {
		t.Errorf("the read-only commit (event %d) reached no batch", readOnly)
	}
}

// The cluster's first start: the initial full refresh is the only one.
func TestLookbackFirstStartCostsOnlyTheInitialFullRefresh(t *testing.T) {
	log := &memLog{}
	log.createTable("sales", "orders")
	log.openTxn(300)
	log.openTxn(301)
	log.allocWriteID("sales", "lines", 301)
	r := newTxnRig(t, log, newMemStore(), rigOpts{})
	r.becomeMaster()
	r.run(10)
	log.commitTxn(300)
	commit := log.commitTxn(301)
	r.run(10)
	if n := r.fe.refreshes(); n != 1 || r.unknownCommits() != 0 {
		t.Fatalf("%d full refreshes, %v unknown commits; want only the initial refresh", n, r.unknownCommits())
	}
	if got, full, _ := r.fe.refreshedInBatchOf(commit); full || !slices.Equal(got, []string{"sales.lines"}) {
		t.Fatalf("the commit refreshed %v (full %v); want [sales.lines]", got, full)
	}
}

// The window is W events: a transaction opened before it is still an unknown
// commit (a full refresh, counted); one opened inside it is known.
func TestLookbackTransactionOpenedBeforeTheWindowIsStillUnknown(t *testing.T) {
	log := &memLog{}
	log.openTxn(400)                         // 1
	log.allocWriteID("sales", "orders", 400) // 2
	log.createTable("sales", "a")            // 3
	log.openTxn(401)                         // 4: the window (3, 6] starts here
	log.allocWriteID("sales", "lines", 401)  // 5
	log.createTable("sales", "b")            // 6
	store := newMemStore()
	store.seedAt(6, "")
	r := newTxnRig(t, log, store, rigOpts{txnLookback: 3})
	r.becomeMaster()
	inWindow := log.commitTxn(401)
	r.run(10)
	if got, full, _ := r.fe.refreshedInBatchOf(inWindow); full || !slices.Equal(got, []string{"sales.lines"}) {
		t.Fatalf("the commit of a transaction opened in the window refreshed %v (full %v); want [sales.lines]", got, full)
	}
	if _, lowest := log.fetchesBelow(0); lowest != 3 {
		t.Errorf("the lowest fetch was after %d; want 3 (the cursor 6 less the window of 3 events)", lowest)
	}
	before := log.commitTxn(400)
	r.run(10)
	if _, full, _ := r.fe.refreshedInBatchOf(before); !full || r.unknownCommits() != 1 {
		t.Fatalf("the commit of a transaction opened before the window: full refresh %v, %v unknown commits; want a full refresh, 1", full, r.unknownCommits())
	}
	if v := metricValue(r.a.m.fullRefreshes.WithLabelValues("hive", "txn_unknown")); v != 1 {
		t.Errorf("full refreshes for txn_unknown = %v, want 1", v)
	}
}

// A window that cannot be read leaves the state knowing nothing, as without a
// look-back: the commit is an unknown commit, and the loop goes on.
func TestLookbackReadFailingFallsBackAndTheLoopGoesOn(t *testing.T) {
	log := &memLog{}
	log.createTable("sales", "orders")
	log.openTxn(500)
	log.allocWriteID("sales", "orders", 500)
	r := newTxnRig(t, log, newMemStore(), rigOpts{})
	src := &failingLog{memLog: log, below: log.current()}
	r.l.cat.Source = src
	logs := r.observe()
	r.becomeMaster()
	r.run(10) // the initial full refresh, as of 3
	commit := log.commitTxn(500)
	r.run(10)
	if src.failed() == 0 {
		t.Fatalf("no read of the window was attempted")
	}
	if n := logs.FilterMessageSnippet("could not rebuild the open-transaction state").Len(); n != 1 {
		t.Errorf("%d warnings of the failed look-back; want 1", n)
	}
	if _, full, _ := r.fe.refreshedInBatchOf(commit); !full || r.unknownCommits() != 1 || r.fe.refreshes() != 2 {
		t.Fatalf("after the failed look-back the commit: full refresh %v, %v unknown commits, %d refreshes; want a full refresh, 1, 2",
			full, r.unknownCommits(), r.fe.refreshes())
	}
	next := log.createTable("sales", "after")
	r.run(10)
	if _, full, ok := r.fe.refreshedInBatchOf(next); !ok || full {
		t.Errorf("event %d after the failed look-back: applied %v, full %v; want applied as a change", next, ok, full)
	}
	if n := src.failed(); n != 1 {
		t.Errorf("%d reads of the window; want 1 (one look-back, then the state that knows nothing)", n)
	}
}

// Events cleaned below the window are not needed: the window is read from the
// oldest retained.
func TestLookbackReadsFromTheOldestRetainedEvent(t *testing.T) {
	log := &memLog{}
	log.createTable("sales", "a")
	log.createTable("sales", "b")
	log.openTxn(600)
	log.allocWriteID("sales", "orders", 600)
	log.cleanThrough(2)
	store := newMemStore()
	store.seedAt(log.current(), "")
	r := newTxnRig(t, log, store, rigOpts{})
	r.becomeMaster()
	commit := log.commitTxn(600)
	r.run(10)
	if got, full, _ := r.fe.refreshedInBatchOf(commit); full || !slices.Equal(got, []string{"sales.orders"}) || r.fe.refreshes() != 0 {
		t.Fatalf("the commit refreshed %v (full %v, %d full refreshes); want [sales.orders] and none", got, full, r.fe.refreshes())
	}
}

// Events cleaned within the window while it is read may have held allocations
// of the transactions seen before them: the state starts over after the gap,
// so such a transaction's commit is unknown rather than a refresh of only the
// tables seen.
func TestLookbackGapWithinTheWindowStartsTheStateOver(t *testing.T) {
	log := &memLog{}
	log.openTxn(700)                         // 1
	log.allocWriteID("sales", "orders", 700) // 2
	log.allocWriteID("sales", "lines", 700)  // 3: cleaned during the read
	log.createTable("sales", "a")            // 4: cleaned during the read
	log.openTxn(701)                         // 5
	log.allocWriteID("sales", "stock", 701)  // 6
	store := newMemStore()
	store.seedAt(6, "")
	r := newTxnRig(t, log, store, rigOpts{batch: 2})
	var once sync.Once
	log.onFetch = func(c fetchCall) {
		if c.after == 0 {
			once.Do(func() { log.cleanThrough(4) })
		}
	}
	r.becomeMaster()
	known := log.commitTxn(701)
	r.run(10)
	if got, full, _ := r.fe.refreshedInBatchOf(known); full || !slices.Equal(got, []string{"sales.stock"}) {
		t.Fatalf("the commit of the transaction opened after the gap refreshed %v (full %v); want [sales.stock]", got, full)
	}
	partial := log.commitTxn(700)
	r.run(10)
	if got, full, _ := r.fe.refreshedInBatchOf(partial); !full || r.unknownCommits() != 1 {
		t.Fatalf("the commit of a transaction whose allocations a gap may hide refreshed %v (full %v, %v unknown commits); want a full refresh, 1", got, full, r.unknownCommits())
	}
}

// The rebuilt state is written with the cursor: a restart resumes with it and
// reads no window again.
func TestLookbackIsNotRepeatedAfterARestart(t *testing.T) {
	log := &memLog{}
	log.createTable("sales", "orders")
	log.openTxn(800)
	log.allocWriteID("sales", "orders", 800)
	seeded := log.current()
	store := newMemStore()
	store.seedAt(seeded, "")
	r := newTxnRig(t, log, store, rigOpts{})
	r.becomeMaster()
	log.createTable("sales", "a")
	r.run(10)
	below := func() int {
		n, _ := log.fetchesBelow(seeded)
		return n
	}
	if below() == 0 {
		t.Fatalf("the seeded master read no window before its cursor")
	}
	read := below()
	restarted := newTxnRig(t, log, store, rigOpts{})
	restarted.becomeMaster()
	commit := log.commitTxn(800)
	restarted.run(10)
	if n := below() - read; n != 0 {
		t.Errorf("the restarted master read the window again (%d fetches)", n)
	}
	if got, full, _ := restarted.fe.refreshedInBatchOf(commit); full || !slices.Equal(got, []string{"sales.orders"}) {
		t.Fatalf("after the restart the commit refreshed %v (full %v); want [sales.orders]", got, full)
	}
}
