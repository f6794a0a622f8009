package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms/message"
)

// A write to a transactional (ACID) table logs no INSERT: the metastore logs
// ALLOC_WRITE_ID_EVENT (the table, the transactions writing it) and later the
// transaction's COMMIT_TXN, which names only the transaction (reference §5).
// txnState is what a catalog's member remembers in between: the open
// transactions that wrote a table, as of its cursor. A COMMIT_TXN of one of
// them refreshes its tables in the commit's batch (never earlier: a refresh at
// allocation time would load the files from before the commit).
//
// What the state cannot know. The state is complete for the transactions at or
// above knownFrom: they opened after tracking began (their OPEN_TXN was seen;
// Hive allocates transaction ids in increasing order in the metastore
// transaction that logs OPEN_TXN, so ids and the log agree), so every
// allocation they made was seen. A COMMIT_TXN of an unrecorded transaction
// there wrote nothing (the read-only transaction, by far the most common).
// Below knownFrom, or with knownFrom unknown (-1: nothing tracked yet, an
// undecodable transaction event, the state not as of the cursor the batch
// starts from), a commit of a transaction may have written tables whose
// allocations were never seen: an unknown commit, which the step answers with
// a full refresh of the catalog, counted (hmssync_txn_unknown_commits_total)
// and logged. knownFrom becomes known again at the next OPEN_TXN, or from the
// look-back (lookback.go) when the state knows nothing as of the cursor.
//
// Bounded (txnLimits): at most maxOpen transactions, maxTables tables each,
// and maxBytes of names; transactions whose first write is older than the
// metastore's hive.txn.timeout are dropped (a writer that keeps heartbeating
// may outlive it: its commit then costs a full refresh). A transaction dropped
// for a bound, or one with more tables than maxTables, is no longer fully
// known: it is remembered by its id alone (a tombstone, at most maxDropped), so
// that its commit is an unknown commit, never silently nothing. When the
// tombstones are full, the oldest goes and knownFrom moves past it instead.
//
// The steps change it only through its methods: plan computes what a batch's
// transaction events yield and the state after it without changing this one,
// adopt takes that state once the batch is applied, so a batch that fails and
// is read again sees the state from before it.
type txnState struct {
	open map[int64]openTxn
	// dropped are the tombstones: transactions dropped for a bound, by id,
	// with the time of their first write.
	dropped map[int64]int64
	// knownFrom is the lowest transaction id from which on every allocation
	// was seen; -1: none.
	knownFrom int64
	// asOf is the event id the state is as of: the cursor of the member
	// that holds it (-1: none yet).
	asOf int64
	// bytes estimates what open holds (names and per-entry cost).
	bytes int
	lim   txnLimits
}

// openTxn is one open transaction that wrote tables.
type openTxn struct {
	since  int64 // the eventTime (s) of its first allocation seen
	tables []change.Object
	// overflow: it wrote more than maxTables tables; they are not kept, and
	// its commit is an unknown commit.
	overflow bool
}

// txnLimits bound a txnState.
type txnLimits struct {
	maxOpen, maxTables, maxBytes, maxDropped int
	// timeout is the metastore's hive.txn.timeout: a transaction that has
	// not heartbeaten for that long is aborted by the metastore.
	timeout time.Duration
}

const (
	// DefaultTxnTimeout is Catalog.TxnTimeout's default: Hive's default
	// hive.txn.timeout.
	DefaultTxnTimeout = 300 * time.Second
	maxOpenTxns       = 2000
	maxTablesPerTxn   = 64
	maxDroppedTxns    = 4096
	// maxTxnStateBytes bounds the state's names; with at most
	// maxDroppedTxns tombstones of about 25 bytes of JSON each, the state's
	// JSON in etcd stays well below cursorstore.MaxTxnsBytes (one value of
	// the fenced commit; etcd refuses requests over 1.5 MiB).
	maxTxnStateBytes = 256 << 10
	// txnEntryBytes and txnTableBytes are what an entry and one of its
	// tables cost besides the names (and about what their JSON adds).
	txnEntryBytes = 48
	txnTableBytes = 16
)

func defaultTxnLimits(timeout time.Duration) txnLimits {
	if timeout <= 0 {
		timeout = DefaultTxnTimeout
	}
	return txnLimits{maxOpen: maxOpenTxns, maxTables: maxTablesPerTxn, maxBytes: maxTxnStateBytes, maxDropped: maxDroppedTxns, timeout: timeout}
}

func newTxnState(lim txnLimits) txnState {
	return txnState{open: map[int64]openTxn{}, dropped: map[int64]int64{}, knownFrom: -1, asOf: -1, lim: lim}
}

// txnEvent is one transaction event of a batch, as decoded: where its changes
// go among the batch's (at, an index into decoded.changes) and what it says.
type txnEvent struct {
	id   int64
	time int64
	at   int
	txn  message.Txn
	// lost: the event could not be decoded; what it said is unknown.
	lost bool
}

// txnPlan is what a batch's transaction events yield.
type txnPlan struct {
	next    txnState
	inserts []txnInsert
	// unknown are the transactions whose commit the state could not answer.
	unknown []int64
	// dropped counts the transactions dropped for a bound, by reason.
	dropped map[string]int
	// lost says why the state was found incomplete ("" if not).
	lost string
	// refreshing counts the commits that yielded a refresh.
	refreshing int
}

// txnInsert is a change a commit yields, placed before the batch's change at.
type txnInsert struct {
	at int
	c  change.Descriptor
}

// moveTo makes the state as of event id v: a state as of another id is no
// longer complete (the events in between were not read, or are read again).
func (s *txnState) moveTo(v int64) (lost bool) {
	if s.asOf == v {
		return false
	}
	s.asOf = v
	lost = s.knownFrom != -1
	s.knownFrom = -1
	return lost
}

// plan applies the transaction events evs of the batch starting after from to
// a copy of the state; keep is the catalog's filter.
func (s *txnState) plan(from int64, evs []txnEvent, keep func(change.Descriptor) bool) txnPlan {
	p := txnPlan{next: *s}
	if p.next.moveTo(from) {
		p.lost = "the state was not as of the batch's start"
	}
	if len(evs) == 0 {
		return p // the map is not changed: no copy
	}
	p.next.open = maps.Clone(s.open)
	if p.next.open == nil {
		p.next.open = map[int64]openTxn{}
	}
	p.next.dropped = maps.Clone(s.dropped)
	if p.next.dropped == nil {
		p.next.dropped = map[int64]int64{}
	}
	var latest int64
	for _, ev := range evs {
		latest = max(latest, ev.time)
		p.apply(ev, keep)
	}
	p.next.expire(latest, &p)
	return p
}

// apply takes one event into p.next.
func (p *txnPlan) apply(ev txnEvent, keep func(change.Descriptor) bool) {
	s := &p.next
	if ev.lost {
		if s.knownFrom != -1 {
			p.lost = fmt.Sprintf("transaction event %d could not be decoded", ev.id)
		}
		s.knownFrom = -1
		return
	}
	t := ev.txn
	switch t.Kind {
	case message.TxnOpen:
		if s.knownFrom == -1 {
			s.knownFrom = t.TxnID
		}
	case message.TxnAlloc:
		obj := change.Object{DB: t.DB, Table: t.Table}
		if !keep(change.Descriptor{Op: change.RefreshTable, DB: t.DB, Table: t.Table}) {
			return // outside the catalog's filter: its commit refreshes nothing of it
		}
		for _, id := range t.TxnIDs {
			s.record(id, obj, ev.time, p)
		}
		s.fit(p)
	case message.TxnCommit:
		e, recorded := s.open[t.TxnID]
		_, tomb := s.dropped[t.TxnID]
		s.forget(t.TxnID)
		switch {
		case recorded && !tomb && !e.overflow && s.knows(t.TxnID):
			before := len(p.inserts)
			for _, o := range e.tables {
				c := change.Descriptor{EventID: ev.id, Op: change.RefreshTable, DB: o.DB, Table: o.Table, UpdateTime: ev.time}
				if keep(c) { // the filter may have changed since the allocation (a restart)
					p.inserts = append(p.inserts, txnInsert{at: ev.at, c: c})
				}
			}
			if len(p.inserts) > before {
				p.refreshing++
			}
		case recorded || tomb || !s.knows(t.TxnID):
			p.unknown = append(p.unknown, t.TxnID)
		}
	case message.TxnAbort:
		s.forget(t.TxnID)
	}
}

// knows says whether every allocation of transaction id was seen.
func (s *txnState) knows(id int64) bool { return s.knownFrom != -1 && id >= s.knownFrom }

// record notes that transaction id writes obj. A dropped transaction stays a
// tombstone: what it writes is no longer kept, its commit is unknown anyway.
func (s *txnState) record(id int64, obj change.Object, at int64, p *txnPlan) {
	if _, dropped := s.dropped[id]; dropped {
		return
	}
	e, ok := s.open[id]
	if !ok {
		if len(s.open) >= s.lim.maxOpen {
			// An eighth at once, so that a flood of allocations costs a
			// sort per eighth rather than a scan per transaction.
			s.dropOldest(max(1, s.lim.maxOpen/8), "open_cap", p)
		}
		e = openTxn{since: at}
		s.bytes += txnEntryBytes
	}
	if e.overflow || slices.Contains(e.tables, obj) {
		s.open[id] = e
		return
	}
	if len(e.tables) >= s.lim.maxTables {
		s.bytes -= tablesBytes(e.tables)
		e = openTxn{since: e.since, overflow: true}
		p.count("table_cap")
	} else {
		// A new slice: the one before may be shared with the state the
		// plan was copied from.
		e.tables = append(slices.Clip(e.tables), obj)
		s.bytes += nameCost(obj.DB) + nameCost(obj.Table) + txnTableBytes
	}
	s.open[id] = e
}

func tablesBytes(ts []change.Object) int {
	n := 0
	for _, o := range ts {
		n += nameCost(o.DB) + nameCost(o.Table) + txnTableBytes
	}
	return n
}

// nameCost is what a name costs in the state's JSON, at most: a name of
// printable ASCII is written as it is, any other byte may take six
// (json.Marshal writes control bytes and <, >, & as \u00XX).
func nameCost(n string) int {
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return 6 * len(n)
		}
	}
	return len(n)
}

// fit drops the oldest transactions while the state is over its byte bound.
// Tombstones are bounded by their number (maxDropped), not by bytes.
func (s *txnState) fit(p *txnPlan) {
	for s.bytes > s.lim.maxBytes && len(s.open) > 0 {
		s.dropOldest(1, "size_cap", p)
	}
}

// forget removes transaction id, and its tombstone.
func (s *txnState) forget(id int64) {
	if e, ok := s.open[id]; ok {
		s.bytes -= txnEntryBytes + tablesBytes(e.tables)
		delete(s.open, id)
	}
	delete(s.dropped, id)
}

// drop removes transaction id for a bound, leaving its tombstone: it is no
// longer fully known. Beyond maxDropped tombstones the lowest quarter go, and
// the state is complete only above them.
func (s *txnState) drop(id int64, reason string, p *txnPlan) {
	since := s.open[id].since
	s.forget(id)
	s.dropped[id] = since
	p.count(reason)
	if len(s.dropped) <= s.lim.maxDropped {
		return
	}
	ids := slices.Sorted(maps.Keys(s.dropped))
	for _, t := range ids[:max(1, len(ids)/4)] {
		delete(s.dropped, t)
		if s.knownFrom != -1 && s.knownFrom <= t {
			s.knownFrom = t + 1
		}
	}
}

// dropOldest drops the n transactions whose first write is oldest.
func (s *txnState) dropOldest(n int, reason string, p *txnPlan) {
	type aged struct{ id, since int64 }
	all := make([]aged, 0, len(s.open))
	for id, e := range s.open {
		all = append(all, aged{id, e.since})
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Or(cmp.Compare(a.since, b.since), cmp.Compare(a.id, b.id)) })
	for _, a := range all[:min(n, len(all))] {
		s.drop(a.id, reason, p)
	}
}

// reset forgets everything: the log is another one (a new lineage), whose
// transaction ids say nothing of this one's.
func (s *txnState) reset() { *s = newTxnStateAt(s.lim, s.asOf) }

// expire drops the transactions whose first allocation is older than the
// metastore's timeout at now (an eventTime, s): the metastore has aborted them
// unless they kept heartbeating.
func (s *txnState) expire(now int64, p *txnPlan) {
	if now <= 0 {
		return
	}
	limit := now - int64(s.lim.timeout/time.Second)
	for id, e := range s.open {
		if e.since < limit {
			s.drop(id, "timeout", p)
		}
	}
}

func (p *txnPlan) count(reason string) {
	if p.dropped == nil {
		p.dropped = map[string]int{}
	}
	p.dropped[reason]++
}

// changes returns the batch's changes with the commits' refreshes in place:
// each before the change that followed its commit.
func (p *txnPlan) changes(batch []change.Descriptor) []change.Descriptor {
	if len(p.inserts) == 0 {
		return batch
	}
	out := make([]change.Descriptor, 0, len(batch)+len(p.inserts))
	i := 0
	for _, ins := range p.inserts {
		for ; i < ins.at && i < len(batch); i++ {
			out = append(out, batch[i])
		}
		out = append(out, ins.c)
	}
	return append(out, batch[i:]...)
}

// adopt takes the state p computed, as of event id to, once its batch is
// applied.
func (s *txnState) adopt(p txnPlan, to int64) {
	*s = p.next
	s.asOf = to
}

// size is how many open transactions the state holds.
func (s *txnState) size() int { return len(s.open) }

// The state's JSON, as etcd holds it (readable with etcdctl): the ids from
// which on it is complete and the open transactions with their tables, in id
// order so that an unchanged state is the same bytes. It is as of the cursor
// written with it, so it carries no event id of its own.
type txnStateJSON struct {
	Version   int       `json:"version"`
	KnownFrom int64     `json:"complete_from"`
	Open      []txnJSON `json:"open"`
	// Dropped are the tombstones: [txn, since] pairs.
	Dropped [][2]int64 `json:"dropped,omitempty"`
}

type txnJSON struct {
	Txn      int64       `json:"txn"`
	Since    int64       `json:"since"`
	Tables   [][2]string `json:"tables,omitempty"`
	Overflow bool        `json:"overflow,omitempty"`
}

const txnStateVersion = 1

// marshal is the state's JSON.
func (s *txnState) marshal() []byte {
	j := txnStateJSON{Version: txnStateVersion, KnownFrom: s.knownFrom, Open: make([]txnJSON, 0, len(s.open))}
	for id, e := range s.open {
		t := txnJSON{Txn: id, Since: e.since, Overflow: e.overflow}
		for _, o := range e.tables {
			t.Tables = append(t.Tables, [2]string{o.DB, o.Table})
		}
		j.Open = append(j.Open, t)
	}
	slices.SortFunc(j.Open, func(a, b txnJSON) int { return cmp.Compare(a.Txn, b.Txn) })
	for id, since := range s.dropped {
		j.Dropped = append(j.Dropped, [2]int64{id, since})
	}
	slices.SortFunc(j.Dropped, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	b, _ := json.Marshal(j) // strings, numbers and booleans only: cannot fail
	return b
}

// loadTxnState reads a state written by marshal, as of event id asOf. An
// absent one (nil) is a state that knows nothing; one that is not what
// marshal writes, or exceeds the bounds, is an error (the caller then starts
// from a state that knows nothing).
func loadTxnState(raw []byte, asOf int64, lim txnLimits) (txnState, error) {
	s := newTxnState(lim)
	s.asOf = asOf
	if raw == nil {
		return s, nil
	}
	if len(raw) > 4*lim.maxBytes {
		return newTxnStateAt(lim, asOf), fmt.Errorf("%d bytes, more than the %d the state is bounded to", len(raw), 4*lim.maxBytes)
	}
	var j txnStateJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return newTxnStateAt(lim, asOf), err
	}
	if j.Version != txnStateVersion || len(j.Open) > lim.maxOpen || len(j.Dropped) > lim.maxDropped || j.KnownFrom < -1 {
		return newTxnStateAt(lim, asOf), fmt.Errorf("version %d with %d transactions (%d dropped) from %d: want version %d, at most %d transactions (%d dropped)",
			j.Version, len(j.Open), len(j.Dropped), j.KnownFrom, txnStateVersion, lim.maxOpen, lim.maxDropped)
	}
	for _, d := range j.Dropped {
		s.dropped[d[0]] = d[1]
	}
	for _, t := range j.Open {
		if len(t.Tables) > lim.maxTables || t.Txn < 0 {
			return newTxnStateAt(lim, asOf), fmt.Errorf("transaction %d with %d tables: want at most %d", t.Txn, len(t.Tables), lim.maxTables)
		}
		e := openTxn{since: t.Since, overflow: t.Overflow}
		for _, n := range t.Tables {
			e.tables = append(e.tables, change.Object{DB: n[0], Table: n[1]})
		}
		s.open[t.Txn] = e
		s.bytes += txnEntryBytes + tablesBytes(e.tables)
	}
	if s.bytes > lim.maxBytes {
		return newTxnStateAt(lim, asOf), fmt.Errorf("%d bytes of names, more than %d", s.bytes, lim.maxBytes)
	}
	s.knownFrom = j.KnownFrom
	return s, nil
}

func newTxnStateAt(lim txnLimits, asOf int64) txnState {
	s := newTxnState(lim)
	s.asOf = asOf
	return s
}
