package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms/message"
)

// Transaction events as Hive 3.1.3 writes them (reference §3): header dbName
// the string "null", tableName a single space, the table only in the
// ALLOC_WRITE_ID_EVENT's body. Times are seconds.

func (m *memLog) appendEvent(ev message.Event) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev.ID = m.current() + 1
	if ev.Time == 0 {
		ev.Time = int32(1700000000 + ev.ID)
	}
	m.events = append(m.events, ev)
	return ev.ID
}

func (m *memLog) openTxn(txn int64) int64 {
	return m.appendEvent(message.Event{Type: message.EventOpenTxn, DB: "null", Table: " ", Format: message.FormatJSON,
		Message: fmt.Sprintf(`{"txnIds":null,"timestamp":1,"fromTxnId":%d,"toTxnId":%d,"server":"","servicePrincipal":""}`, txn, txn)})
}

func (m *memLog) allocWriteID(db, table string, txns ...int64) int64 {
	var ids []string
	for _, t := range txns {
		ids = append(ids, fmt.Sprint(t))
	}
	return m.appendEvent(message.Event{Type: message.EventAllocWriteID, DB: "null", Table: " ", Format: message.FormatJSON,
		Message: fmt.Sprintf(`{"server":"","servicePrincipal":"","txnIdList":[%s],"writeIdList":[1],"dbName":%q,"tableName":%q,"timestamp":1}`,
			strings.Join(ids, ","), db, table)})
}

func (m *memLog) commitTxn(txn int64) int64 {
	return m.appendEvent(message.Event{Type: message.EventCommitTxn, DB: "null", Table: " ", Format: message.FormatJSON,
		Message: fmt.Sprintf(`{"txnid":%d,"timestamp":1,"server":"","servicePrincipal":""}`, txn)})
}

func (m *memLog) abortTxn(txn int64) int64 {
	return m.appendEvent(message.Event{Type: message.EventAbortTxn, DB: "null", Table: " ", Format: message.FormatJSON,
		Message: fmt.Sprintf(`{"txnid":%d,"timestamp":1,"server":"","servicePrincipal":""}`, txn)})
}

// createTable is an ordinary (non-transactional) event, for a log to start with.
func (m *memLog) createTable(db, table string) int64 {
	return m.appendEvent(message.Event{Type: message.EventCreateTable, DB: db, Table: table, Format: message.FormatJSON,
		Message: fmt.Sprintf(`{"db":%q,"table":%q,"tableType":"MANAGED_TABLE","timestamp":1}`, db, table)})
}

// feBatch is one batch an FE received: its events' range, whether it was a
// full refresh, and the tables it refreshed.
type feBatch struct {
	from, to  int64
	full      bool
	refreshed []string
}

func (f *memFE) received() []feBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []feBatch
	for _, b := range f.batches {
		fb := feBatch{from: b.From, to: b.To, full: b.FullRefresh}
		for _, c := range b.Changes {
			if c.Op == change.RefreshTable {
				fb.refreshed = append(fb.refreshed, c.DB+"."+c.Table)
			}
		}
		out = append(out, fb)
	}
	return out
}

// refreshedInBatchOf returns the tables the batch holding event id refreshed,
// and whether that batch was a full refresh; ok false: no batch held it.
func (f *memFE) refreshedInBatchOf(id int64) (tables []string, full, ok bool) {
	for _, b := range f.received() {
		if b.from < id && id <= b.to {
			return b.refreshed, b.full, true
		}
	}
	return nil, false, false
}

// refreshedAnywhere lists every table refreshed in batches after event id.
func (f *memFE) refreshedAfter(id int64) []string {
	var out []string
	for _, b := range f.received() {
		if b.from >= id {
			out = append(out, b.refreshed...)
		}
	}
	return out
}

func newTxnRig(t *testing.T, log *memLog, store *memStore, o rigOpts) *rig {
	t.Helper()
	o.decoder = message.NewDecoder("")
	return newRig(t, log, store, o)
}

// startedRig is a master that full-refreshed the log's first event and holds
// its cursor.
func startedRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	log := &memLog{}
	log.createTable("sales", "orders")
	r := newTxnRig(t, log, newMemStore(), o)
	r.becomeMaster()
	r.run(10)
	return r
}

func TestTxnCommitRefreshesItsTablesInTheCommitsBatchOnly(t *testing.T) {
	r := startedRig(t, rigOpts{})
	r.log.openTxn(41)
	alloc := r.log.allocWriteID("sales", "orders", 41)
	r.log.allocWriteID("sales", "lines", 41)
	r.log.allocWriteID("sales", "Stock", 41) // Hive may log the client's spelling
	r.run(10)
	if got, full, ok := r.fe.refreshedInBatchOf(alloc); !ok || full || len(got) != 0 {
		t.Fatalf("the allocations' batch refreshed %v (full %v, applied %v): a refresh before the commit loads the files from before it", got, full, ok)
	}
	commit := r.log.commitTxn(41)
	r.run(10)
	got, full, ok := r.fe.refreshedInBatchOf(commit)
	want := []string{"sales.orders", "sales.lines", "sales.stock"}
	if !ok || full || !slices.Equal(got, want) {
		t.Fatalf("the commit's batch refreshed %v (full refresh %v, applied %v); want %v", got, full, ok, want)
	}
	// Forgotten once committed: a second commit of the id refreshes nothing.
	again := r.log.commitTxn(41)
	r.run(10)
	if got, full, _ := r.fe.refreshedInBatchOf(again); len(got) != 0 || full {
		t.Errorf("a repeated commit refreshed %v (full %v)", got, full)
	}
	if n := r.l.txns.size(); n != 0 {
		t.Errorf("%d transactions still open", n)
	}
}

func TestTxnAbortAndReadOnlyTransactionsRefreshNothing(t *testing.T) {
	r := startedRig(t, rigOpts{})
	start := r.log.current()
	r.log.openTxn(50)
	r.log.allocWriteID("sales", "orders", 50)
	r.log.abortTxn(50)
	r.log.openTxn(51) // read-only: the common case
	r.log.commitTxn(51)
	r.log.commitTxn(50) // after its abort: nothing left of it
	r.run(10)
	if got := r.fe.refreshedAfter(start); len(got) != 0 {
		t.Errorf("refreshed %v after an abort and a read-only commit; want nothing", got)
	}
	if n := r.fe.refreshes(); n != 1 {
		t.Errorf("%d full refreshes, want only the initial one", n)
	}
	if v := metricValue(r.a.m.txnUnknownCommits.WithLabelValues("hive")); v != 0 {
		t.Errorf("%v unknown commits counted", v)
	}
}

// A batch allocation (a streaming writer's transaction batch) lists several
// transactions: each commit refreshes only when it commits.
func TestTxnBatchAllocationRefreshesAtEachCommit(t *testing.T) {
	r := startedRig(t, rigOpts{})
	r.log.openTxn(60)
	r.log.allocWriteID("sales", "orders", 60, 61, 62)
	r.run(10)
	for _, c := range []struct {
		add  func() int64
		want []string
	}{
		{func() int64 { return r.log.commitTxn(60) }, []string{"sales.orders"}},
		{func() int64 { return r.log.abortTxn(61) }, nil},
		{func() int64 { return r.log.commitTxn(62) }, []string{"sales.orders"}},
	} {
		id := c.add()
		r.run(10)
		if got, _, _ := r.fe.refreshedInBatchOf(id); !slices.Equal(got, c.want) {
			t.Errorf("event %d: batch refreshed %v; want %v", id, got, c.want)
		}
	}
}

func TestTxnCommitOfATransactionOpenedBeforeTrackingRefreshesTheCatalog(t *testing.T) {
	r := startedRig(t, rigOpts{})
	before := r.fe.refreshes()
	// The sidecar started while transaction 9 was open: its OPEN_TXN and
	// allocations came before the cursor. Its commit could have written any
	// table.
	commit := r.log.commitTxn(9)
	r.run(10)
	if _, full, _ := r.fe.refreshedInBatchOf(commit); !full || r.fe.refreshes() != before+1 {
		t.Fatalf("a commit the state cannot answer for: full refresh %v (%d refreshes); want one", full, r.fe.refreshes()-before)
	}
	if v := metricValue(r.a.m.txnUnknownCommits.WithLabelValues("hive")); v != 1 {
		t.Errorf("hmssync_txn_unknown_commits_total = %v, want 1", v)
	}
	if v := metricValue(r.a.m.fullRefreshes.WithLabelValues("hive", "txn_unknown")); v != 1 {
		t.Errorf("full refreshes for txn_unknown = %v, want 1", v)
	}
	// Once an OPEN_TXN was seen, a commit of a later transaction that wrote
	// nothing is read-only, and one of an earlier one is still unknown.
	r.log.openTxn(20)
	readOnly := r.log.commitTxn(21)
	r.run(10)
	if _, full, _ := r.fe.refreshedInBatchOf(readOnly); full {
		t.Errorf("a read-only commit after tracking began refreshed the catalog")
	}
	old := r.log.commitTxn(19)
	r.run(10)
	if _, full, _ := r.fe.refreshedInBatchOf(old); !full {
		t.Errorf("a commit of a transaction opened before tracking began did not refresh the catalog")
	}
}

func TestTxnCatalogFilterAppliesToWhatACommitRefreshes(t *testing.T) {
	r := startedRig(t, rigOpts{include: []string{`sales\..*`}})
	r.log.openTxn(70)
	r.log.allocWriteID("sales", "orders", 70)
	r.log.allocWriteID("hr", "people", 70)
	commit := r.log.commitTxn(70)
	r.run(10)
	if got, _, _ := r.fe.refreshedInBatchOf(commit); !slices.Equal(got, []string{"sales.orders"}) {
		t.Errorf("the commit refreshed %v; want only the included sales.orders", got)
	}
}

// A sidecar stopped after applying the allocation and started again before
// the commit still refreshes the table: the state is in etcd with its cursor.
func TestTxnStateSurvivesAMasterRestart(t *testing.T) {
	r := startedRig(t, rigOpts{})
	r.log.openTxn(80)
	r.log.allocWriteID("sales", "orders", 80)
	r.run(10)
	restarted := newTxnRig(t, r.log, r.store, rigOpts{})
	restarted.becomeMaster()
	commit := r.log.commitTxn(80)
	restarted.run(10)
	got, full, ok := restarted.fe.refreshedInBatchOf(commit)
	if !ok || full || !slices.Equal(got, []string{"sales.orders"}) {
		t.Fatalf("after a restart the commit's batch refreshed %v (full %v, applied %v); want [sales.orders]", got, full, ok)
	}
	if n := restarted.fe.refreshes(); n != 0 {
		t.Errorf("the restarted master full-refreshed %d times", n)
	}
}

// A new master taking over between the allocation and the commit refreshes
// the table: with a cluster-scope dialect the follower took the master's state
// with the committed cursor; with a local-scope one it applied the allocation
// itself.
func TestTxnStateSurvivesAFailover(t *testing.T) {
	for _, scope := range []applier.Scope{applier.ScopeCluster, applier.ScopeLocal} {
		t.Run(string(scope), func(t *testing.T) {
			a := startedRig(t, rigOpts{scope: scope})
			b := newTxnRig(t, a.log, a.store, rigOpts{scope: scope, member: "m1"})
			b.run(10) // a follower, caught up with the master
			a.log.openTxn(90)
			a.log.allocWriteID("sales", "orders", 90)
			a.run(10)
			b.run(10)
			b.becomeMaster() // a's term ends
			commit := a.log.commitTxn(90)
			b.run(10)
			got, full, ok := b.fe.refreshedInBatchOf(commit)
			if !ok || full || !slices.Equal(got, []string{"sales.orders"}) {
				t.Fatalf("the new master's batch of the commit refreshed %v (full %v, applied %v); want [sales.orders]", got, full, ok)
			}
		})
	}
}

// A follower of a local-scope dialect applies the events itself: restarted
// between the allocation and the commit, it refreshes the table on its FE.
func TestTxnStateSurvivesAFollowerRestart(t *testing.T) {
	a := startedRig(t, rigOpts{})
	b := newTxnRig(t, a.log, a.store, rigOpts{member: "m1"})
	b.run(10)
	a.log.openTxn(100)
	a.log.allocWriteID("sales", "orders", 100)
	a.run(10)
	b.run(10)
	if n := b.l.txns.size(); n != 1 {
		t.Fatalf("the follower holds %d open transactions, want 1", n)
	}
	b2 := newTxnRig(t, a.log, a.store, rigOpts{member: "m1"})
	commit := a.log.commitTxn(100)
	a.run(10)
	b2.run(10)
	got, full, ok := b2.fe.refreshedInBatchOf(commit)
	if !ok || full || !slices.Equal(got, []string{"sales.orders"}) {
		t.Fatalf("the restarted follower's batch of the commit refreshed %v (full %v, applied %v); want [sales.orders]", got, full, ok)
	}
}

// The master's state is written with its cursor only when it changed.
func TestTxnStateIsWrittenWithTheCursorOnlyWhenItChanged(t *testing.T) {
	r := startedRig(t, rigOpts{})
	writes := r.store.txnsWrites
	r.log.createTable("sales", "a")
	r.run(10)
	r.log.createTable("sales", "b")
	r.run(10)
	if r.store.txnsWrites != writes {
		t.Errorf("%d writes of an unchanged state", r.store.txnsWrites-writes)
	}
	r.log.openTxn(5)
	r.log.allocWriteID("sales", "orders", 5)
	r.run(10)
	if r.store.txnsWrites != writes+1 || !strings.Contains(r.store.txns, `"tables":[["sales","orders"]]`) {
		t.Errorf("after an allocation: %d writes, state %s", r.store.txnsWrites-writes, r.store.txns)
	}
}

// A poisoned allocation heals its table and leaves the state incomplete: the
// commits of the transactions open then refresh the catalog, never nothing.
func TestTxnPoisonedAllocationIsHealedAndMakesCommitsUnknown(t *testing.T) {
	r := startedRig(t, rigOpts{})
	r.log.openTxn(110)
	r.log.appendEvent(message.Event{Type: message.EventAllocWriteID, DB: "null", Table: " ", Format: message.FormatJSON,
		Message: `{"dbName":"sales","tableName":"orders","txnIdList":[110,`})
	r.run(10)
	commit := r.log.commitTxn(110)
	r.run(10)
	if _, full, ok := r.fe.refreshedInBatchOf(commit); !ok || !full {
		t.Fatalf("the commit after a poisoned allocation: full refresh %v (applied %v); want a full refresh", full, ok)
	}
	if v := metricValue(r.a.m.selfHeals.WithLabelValues("hive", "table")); v != 1 {
		t.Errorf("table heals = %v, want 1 (the allocation names sales.orders)", v)
	}
}

func TestTxnCompactionRefreshesItsTable(t *testing.T) {
	r := startedRig(t, rigOpts{})
	id := r.log.appendEvent(message.Event{Type: message.EventCommitCompaction, Format: message.FormatJSON,
		Message: `{"txnid":5,"compactionId":1,"type":"MAJOR","dbname":"sales","tableName":"orders","partName":null,"timestamp":1}`})
	r.run(10)
	if got, _, _ := r.fe.refreshedInBatchOf(id); !slices.Equal(got, []string{"sales.orders"}) {
		t.Errorf("compaction refreshed %v", got)
	}
}

// The bounds: each drop is counted, and the dropped transaction's commit is an
// unknown commit, never silently nothing.
func TestTxnStateBounds(t *testing.T) {
	keepAll := func(change.Descriptor) bool { return true }
	lim := txnLimits{maxOpen: 2, maxTables: 2, maxBytes: 1 << 20, maxDropped: 10, timeout: 100 * time.Second}
	open := func(id, txn int64) txnEvent {
		return txnEvent{id: id, time: 1000, txn: message.Txn{Kind: message.TxnOpen, TxnID: txn}}
	}
	alloc := func(id, at int64, table string, txns ...int64) txnEvent {
		return txnEvent{id: id, time: at, txn: message.Txn{Kind: message.TxnAlloc, TxnIDs: txns, DB: "d", Table: table}}
	}
	commit := func(id, at, txn int64) txnEvent {
		return txnEvent{id: id, time: at, txn: message.Txn{Kind: message.TxnCommit, TxnID: txn}}
	}
	for _, c := range []struct {
		name    string
		evs     []txnEvent
		reason  string
		unknown []int64
		refresh int
	}{
		{"open transactions", []txnEvent{open(1, 1), alloc(2, 1000, "a", 1), alloc(3, 1001, "a", 2), alloc(4, 1002, "a", 3), commit(5, 1003, 1), commit(6, 1003, 3)},
			"open_cap", []int64{1}, 1},
		{"tables of one transaction", []txnEvent{open(1, 1), alloc(2, 1000, "a", 1), alloc(3, 1000, "b", 1), alloc(4, 1000, "c", 1), commit(5, 1000, 1)},
			"table_cap", []int64{1}, 0},
		{"timeout", []txnEvent{open(1, 1), alloc(2, 1000, "a", 1), alloc(3, 1200, "b", 2), commit(4, 1200, 1), commit(5, 1200, 2)},
			"timeout", []int64{1}, 1},
	} {
		s := newTxnState(lim)
		s.asOf = 0
		// Apply the events one by one, as batches of one: expiry runs at
		// the end of each batch.
		var unknown []int64
		dropped, refreshes := 0, 0
		for i, ev := range c.evs {
			p := s.plan(int64(i), []txnEvent{ev}, keepAll)
			unknown = append(unknown, p.unknown...)
			dropped += p.dropped[c.reason]
			refreshes += len(p.inserts)
			s.adopt(p, int64(i+1))
		}
		if dropped != 1 || !slices.Equal(unknown, c.unknown) || refreshes != c.refresh {
			t.Errorf("%s: dropped %d for %s, unknown commits %v, %d refreshes; want 1, %v, %d", c.name, dropped, c.reason, unknown, refreshes, c.unknown, c.refresh)
		}
	}
	// Tombstones beyond their bound: the oldest goes, and the state is
	// complete only above it, so its commit, and that of a transaction
	// below it that wrote nothing seen, are unknown; one above it is not.
	s := newTxnState(txnLimits{maxOpen: 1, maxTables: 10, maxBytes: 1 << 20, maxDropped: 1, timeout: time.Hour})
	p := s.plan(-1, []txnEvent{open(1, 10), alloc(2, 1000, "a", 10), alloc(3, 1000, "a", 11), alloc(4, 1000, "a", 12),
		commit(5, 1000, 10), commit(6, 1000, 11), commit(7, 1000, 9), commit(8, 1000, 13), commit(9, 1000, 12)}, keepAll)
	if !slices.Equal(p.unknown, []int64{10, 11, 9}) || len(p.inserts) != 1 || p.next.knownFrom != 11 {
		t.Errorf("tombstones beyond their bound: unknown commits %v, %d refreshes, complete from %d; want [10 11 9], 1 (of 12), 11",
			p.unknown, len(p.inserts), p.next.knownFrom)
	}
	// The byte bound: names beyond it drop the oldest transactions.
	s = newTxnState(txnLimits{maxOpen: 100, maxTables: 10, maxBytes: 400, maxDropped: 100, timeout: time.Hour})
	s.asOf = 0
	var evs []txnEvent
	for i := range 20 {
		evs = append(evs, alloc(int64(i+1), int64(1000+i), strings.Repeat("t", 40), int64(i)))
	}
	p = s.plan(0, evs, keepAll)
	if p.dropped["size_cap"] == 0 || p.next.bytes > 400 || len(p.next.marshal()) > 2*400 {
		t.Errorf("byte bound: dropped %d, %d bytes held, %d of JSON", p.dropped["size_cap"], p.next.bytes, len(p.next.marshal()))
	}
	// A plan does not change the state it was made from.
	if len(s.open) != 0 {
		t.Errorf("planning changed the state: %d open", len(s.open))
	}
}

func TestTxnStateJSONRoundTripAndHostileValues(t *testing.T) {
	lim := defaultTxnLimits(0)
	s := newTxnState(lim)
	p := s.plan(-1, []txnEvent{
		{id: 1, time: 10, txn: message.Txn{Kind: message.TxnOpen, TxnID: 7}},
		{id: 2, time: 10, txn: message.Txn{Kind: message.TxnAlloc, TxnIDs: []int64{7, 8}, DB: "sales", Table: "orders"}},
	}, func(change.Descriptor) bool { return true })
	s.adopt(p, 2)
	raw := s.marshal()
	const want = `{"version":1,"complete_from":7,"open":[{"txn":7,"since":10,"tables":[["sales","orders"]]},{"txn":8,"since":10,"tables":[["sales","orders"]]}]}`
	if string(raw) != want {
		t.Fatalf("JSON %s\nwant %s", raw, want)
	}
	back, err := loadTxnState(raw, 2, lim)
	if err != nil || string(back.marshal()) != want || back.asOf != 2 || back.bytes != s.bytes {
		t.Fatalf("loaded %s (as of %d, %d bytes), %v", back.marshal(), back.asOf, back.bytes, err)
	}
	for _, bad := range []string{
		`{`, `{"version":2,"complete_from":1,"open":[]}`, `{"version":1,"complete_from":-5,"open":[]}`,
		`{"version":1,"complete_from":1,"open":[{"txn":-1}]}`,
		`{"version":1,"complete_from":1,"open":[{"txn":1,"tables":[` + strings.Repeat(`["a","b"],`, maxTablesPerTxn) + `["a","b"]]}]}`,
		strings.Repeat(" ", 4*maxTxnStateBytes+1),
	} {
		got, err := loadTxnState([]byte(bad), 3, lim)
		if err == nil || got.knownFrom != -1 || got.size() != 0 || got.asOf != 3 {
			t.Errorf("%.60q: loaded %+v, %v; want an error and a state that knows nothing", bad, got, err)
		}
	}
}

// A COMMIT_TXN that cannot be decoded names no table: the catalog is healed
// (a full refresh), and the loop goes on past it.
func TestTxnPoisonedCommitHealsTheCatalogAndDoesNotWedgeTheLoop(t *testing.T) {
	r := startedRig(t, rigOpts{})
	r.log.openTxn(120)
	r.log.allocWriteID("sales", "orders", 120)
	r.run(10)
	before := r.fe.refreshes()
	poison := r.log.appendEvent(message.Event{Type: message.EventCommitTxn, DB: "null", Table: " ", Format: message.FormatJSON, Message: `{"txnid":`})
	r.runHealing(10)
	if r.fe.refreshes() != before+1 || r.l.cursor.Value() < poison {
		t.Fatalf("after a poisoned commit: %d full refreshes, cursor %d; want one refresh and the cursor past %d", r.fe.refreshes()-before, r.l.cursor.Value(), poison)
	}
	next := r.log.createTable("sales", "after")
	r.run(10)
	if _, _, ok := r.fe.refreshedInBatchOf(next); !ok {
		t.Errorf("event %d after the poisoned commit never reached the FE", next)
	}
}

func TestSkippedTxnTypesNamesWhatTheStateNeeds(t *testing.T) {
	got := skippedTxnTypes([]string{"UPDATE_TBL_COL_STAT_EVENT", message.EventCommitTxn, message.EventAbortTxn, message.EventOpenTxn})
	if want := []string{message.EventOpenTxn, message.EventCommitTxn}; !slices.Equal(got, want) {
		t.Errorf("skippedTxnTypes = %v, want %v (ABORT_TXN costs nothing: an aborted write is dropped at its timeout)", got, want)
	}
	if got := skippedTxnTypes([]string{"UPDATE_TBL_COL_STAT_EVENT"}); got != nil {
		t.Errorf("skippedTxnTypes of no transaction type = %v", got)
	}
}

// Filled to every bound with names that JSON escapes most, the state's JSON
// still fits what the fenced commit accepts.
func TestTxnStateJSONFitsTheCommitAtItsBounds(t *testing.T) {
	lim := defaultTxnLimits(0)
	s := newTxnState(lim)
	var evs []txnEvent
	for i := range lim.maxOpen + lim.maxDropped + 10 {
		evs = append(evs, txnEvent{id: int64(i + 1), time: 1000, txn: message.Txn{Kind: message.TxnAlloc, TxnIDs: []int64{int64(1_000_000_000 + i)},
			DB: strings.Repeat("<", 128), Table: strings.Repeat("\x01", 128) + fmt.Sprint(i)}})
	}
	p := s.plan(-1, evs, func(change.Descriptor) bool { return true })
	raw := p.next.marshal()
	if len(raw) > cursorstore.MaxTxnsBytes || len(p.next.dropped) > lim.maxDropped || p.next.size() > lim.maxOpen {
		t.Errorf("at its bounds the state is %d bytes of JSON (%d open, %d dropped); the commit takes at most %d", len(raw), p.next.size(), len(p.next.dropped), cursorstore.MaxTxnsBytes)
	}
	t.Logf("%d bytes of JSON, %d open, %d tombstones", len(raw), p.next.size(), len(p.next.dropped))
}
