package hmstest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/hmssync/hmssync/hms/message"
)

// Transactions, as a metastore's TxnHandler and DbNotificationListener log them
// (hms.md §3): OPEN_TXN when a transaction opens; ALLOC_WRITE_ID_EVENT when it
// first writes a table (one event per table, naming it in the body); COMMIT_TXN
// or ABORT_TXN at its end, naming only the transaction; after a compaction's own
// transaction commits, COMMIT_COMPACTION_EVENT. A write to a transactional
// table logs no INSERT event, and what a reader of the table sees (TableData)
// changes only at the commit.

// Transaction event types as Hive writes them.
const (
	EventOpenTxn          = "OPEN_TXN"
	EventCommitTxn        = "COMMIT_TXN"
	EventAbortTxn         = "ABORT_TXN"
	EventAllocWriteID     = "ALLOC_WRITE_ID_EVENT"
	EventCommitCompaction = "COMMIT_COMPACTION_EVENT"
)

// ErrTxnLocked is returned by DropTable and RenameTable for a table that an
// open transaction writes: Hive's exclusive lock would wait for it.
var ErrTxnLocked = errors.New("locked by an open transaction")

// TxnStyle is the Hive release whose transaction events the server writes;
// the other events are the same for both.
type TxnStyle int

const (
	// TxnHive4 writes Hive 4.0.1's DbNotificationListener's events: OPEN_TXN,
	// COMMIT_TXN and ABORT_TXN without database, table or catalog in the
	// header; ALLOC_WRITE_ID_EVENT and COMMIT_COMPACTION_EVENT with the
	// database and table but no catalog; COMMIT_TXN's REPL-dump lists (null)
	// and ABORT_TXN's dbsUpdated in the body. The default.
	TxnHive4 TxnStyle = iota
	// TxnHive3 writes Hive 3.1.3's: OPEN_TXN, COMMIT_TXN and ABORT_TXN have
	// the header dbName "null" (the string), ALLOC_WRITE_ID_EVENT the
	// database; all of them tableName " " (the table only in ALLOC's body) and
	// no catalog; the bodies have only the transaction (and ALLOC's table); a
	// compaction logs nothing.
	TxnHive3
)

// WithTxnStyle sets whose transaction events the server writes (default TxnHive4).
func WithTxnStyle(v TxnStyle) Option { return func(s *Server) { s.model.version = v } }

// TxnStyle is whose transaction events the server writes.
func (s *Server) TxnStyle() TxnStyle {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	return s.model.version
}

// SetTxnStyle changes whose transaction events the server writes from now on.
func (s *Server) SetTxnStyle(v TxnStyle) {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	s.model.version = v
}

// TableData is what a reader of a transactional table sees beyond its names:
// what committed transactions and compactions did to it. The FE caches that
// issue 23 is about go stale when it changes without their refresh.
type TableData struct {
	// WriteID is the table's highest committed write id (0: none).
	WriteID int64 `json:"write_id"`
	// Partitions maps each partition a committed transaction wrote to the
	// highest such write id.
	Partitions map[string]int64 `json:"partitions,omitempty"`
	// Compactions counts the committed compactions.
	Compactions int `json:"compactions,omitempty"`
	// EventID is the event after which a reader sees this: the COMMIT_TXN or
	// COMMIT_COMPACTION_EVENT that last changed it (0: none).
	EventID int64 `json:"event_id"`
}

type txnState struct {
	id     int64
	writes []*txnWrite // in allocation order, one per table
}

type txnWrite struct {
	db, table  string
	writeID    int64
	partitions []string // sorted names written; none for an unpartitioned table
}

// txnHeader is the header of a transaction event naming db.table (empty for
// OPEN_TXN, COMMIT_TXN and ABORT_TXN) as the emulated version writes it.
func (s *Server) txnHeader(typ, db, table string) message.Event {
	if s.model.version == TxnHive3 {
		if db == "" {
			db = "null"
		}
		return message.Event{Type: typ, DB: db, Table: " "}
	}
	return message.Event{Type: typ, DB: db, Table: table}
}

// OpenTxn opens a transaction (OPEN_TXN) and returns its id.
func (s *Server) OpenTxn() (int64, error) {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	return s.openTxnLocked()
}

func (s *Server) openTxnLocked() (int64, error) {
	id := s.model.nextTxn
	now := s.now()
	// Hive leaves txnIds null: the range is fromTxnId..toTxnId.
	if _, err := s.appendEvent(s.txnHeader(EventOpenTxn, "", ""), now,
		openTxnMessage{Timestamp: now, FromTxnID: id, ToTxnID: id, head: s.hdr()}); err != nil {
		return 0, err
	}
	s.model.nextTxn++
	s.model.txns[id] = &txnState{id: id}
	return id, nil
}

func (s *Server) openTxn(id int64) (*txnState, error) {
	t, ok := s.model.txns[id]
	if !ok {
		return nil, fmt.Errorf("hmstest: transaction %d is not open (never opened, committed or aborted): %w", id, ErrNotFound)
	}
	return t, nil
}

func (s *Server) txnTable(db, table string) (*tableState, error) {
	t, err := s.table(db, table)
	if err != nil {
		return nil, err
	}
	if !t.Transactional {
		return nil, fmt.Errorf("hmstest: table %s.%s is not transactional (Table.Transactional)", db, table)
	}
	return t, nil
}

// AllocWriteID allocates the transaction's write id for a transactional table
// (allocate_table_write_ids) and returns it. The first allocation of a
// transaction for a table logs ALLOC_WRITE_ID_EVENT; a repeated one returns the
// same id and logs nothing, as Hive does.
func (s *Server) AllocWriteID(txn int64, db, table string) (int64, error) {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	w, err := s.allocLocked(txn, db, table)
	if err != nil {
		return 0, err
	}
	return w.writeID, nil
}

func (s *Server) allocLocked(txn int64, db, table string) (*txnWrite, error) {
	tx, err := s.openTxn(txn)
	if err != nil {
		return nil, err
	}
	t, err := s.txnTable(db, table)
	if err != nil {
		return nil, err
	}
	for _, w := range tx.writes {
		if w.db == db && w.table == table {
			return w, nil
		}
	}
	now := s.now()
	w := &txnWrite{db: db, table: table, writeID: t.nextWriteID}
	if _, err := s.appendEvent(s.txnHeader(EventAllocWriteID, db, table), now, allocWriteIDMessage{head: s.hdr(),
		DBName: db, TableName: table, TxnIDList: []int64{txn}, WriteIDList: []int64{w.writeID}, Timestamp: now}); err != nil {
		return nil, err
	}
	t.nextWriteID++
	tx.writes = append(tx.writes, w)
	return w, nil
}

// TxnWrite writes to a transactional table within an open transaction: into
// the partition with values, or into an unpartitioned table when values is nil.
// The first write of the transaction to the table allocates its write id
// (ALLOC_WRITE_ID_EVENT); the data is visible only after CommitTxn.
func (s *Server) TxnWrite(txn int64, db, table string, values []string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	return s.txnWriteLocked(txn, db, table, values)
}

func (s *Server) txnWriteLocked(txn int64, db, table string, values []string) error {
	t, err := s.txnTable(db, table)
	if err != nil {
		return err
	}
	if _, err := s.openTxn(txn); err != nil {
		return err
	}
	var name string
	if values != nil || len(t.PartitionKeys) > 0 {
		p, n, err := s.partition(t, values)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("hmstest: partition %s of %s.%s: %w", n, db, table, ErrNotFound)
		}
		name = n
	}
	w, err := s.allocLocked(txn, db, table)
	if err != nil {
		return err
	}
	if name != "" && !slices.Contains(w.partitions, name) {
		w.partitions = append(w.partitions, name)
		slices.Sort(w.partitions)
	}
	return nil
}

// autoCommitWriteLocked is Insert into a transactional table: a transaction of
// its own.
func (s *Server) autoCommitWriteLocked(t *tableState, values []string) error {
	txn, err := s.openTxnLocked()
	if err != nil {
		return err
	}
	if err := s.txnWriteLocked(txn, t.DB, t.Name, values); err != nil {
		if abortErr := s.endTxnLocked(txn, true); abortErr != nil {
			return errors.Join(err, abortErr)
		}
		return err
	}
	return s.endTxnLocked(txn, false)
}

// CommitTxn commits (COMMIT_TXN) or, with abort, aborts (ABORT_TXN) an open
// transaction. A commit makes its writes what readers of the tables see
// (TableData); an abort discards them.
func (s *Server) CommitTxn(txn int64, abort bool) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	return s.endTxnLocked(txn, abort)
}

func (s *Server) endTxnLocked(txn int64, abort bool) error {
	tx, err := s.openTxn(txn)
	if err != nil {
		return err
	}
	now := s.now()
	base := txnMessage{TxnID: txn, Timestamp: now, head: s.hdr()}
	var e message.Event
	switch {
	case s.model.version == TxnHive3 && abort:
		e, err = s.appendEvent(s.txnHeader(EventAbortTxn, "", ""), now, base)
	case s.model.version == TxnHive3:
		e, err = s.appendEvent(s.txnHeader(EventCommitTxn, "", ""), now, base)
	case abort:
		dbs := []string{}
		for _, w := range tx.writes {
			if !slices.Contains(dbs, w.db) {
				dbs = append(dbs, w.db)
			}
		}
		e, err = s.appendEvent(s.txnHeader(EventAbortTxn, "", ""), now, abortTxnMessage{txnMessage: base, DBsUpdated: dbs})
	default:
		e, err = s.appendEvent(s.txnHeader(EventCommitTxn, "", ""), now, commitTxnMessage{txnMessage: base})
	}
	if err != nil {
		return err
	}
	delete(s.model.txns, txn)
	if abort {
		return nil
	}
	for _, w := range tx.writes {
		t, err := s.table(w.db, w.table)
		if err != nil {
			continue // not reachable: DropTable and RenameTable refuse while the transaction is open
		}
		d := &t.data
		d.WriteID = max(d.WriteID, w.writeID)
		if len(w.partitions) > 0 {
			d.Partitions = maps.Clone(d.Partitions)
			if d.Partitions == nil {
				d.Partitions = map[string]int64{}
			}
			for _, p := range w.partitions {
				if t.partitions[p] != nil { // not dropped meanwhile (Hive locks partitions; the fake does not)
					d.Partitions[p] = max(d.Partitions[p], w.writeID)
				}
			}
		}
		d.EventID = e.ID
	}
	return nil
}

// Compact compacts a transactional table, or the partition with values, as
// Hive 4's compactor does: its own transaction (OPEN_TXN, COMMIT_TXN) and then
// COMMIT_COMPACTION_EVENT (type MAJOR), after which readers see the rewritten
// files. Hive 3.1's compactor logs nothing (TxnHive3): the files change
// without an event.
func (s *Server) Compact(db, table string, values []string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.txnTable(db, table)
	if err != nil {
		return err
	}
	var part *string
	if values != nil || len(t.PartitionKeys) > 0 {
		p, name, err := s.partition(t, values)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("hmstest: partition %s of %s.%s: %w", name, db, table, ErrNotFound)
		}
		part = &name
	}
	t.data.Compactions++
	if s.model.version == TxnHive3 {
		return nil
	}
	txn, err := s.openTxnLocked()
	if err != nil {
		return err
	}
	if err := s.endTxnLocked(txn, false); err != nil {
		return err
	}
	now := s.now()
	s.model.nextCompaction++
	e, err := s.appendEvent(s.txnHeader(EventCommitCompaction, db, table), now, commitCompactionMessage{
		txnMessage:   txnMessage{TxnID: txn, Timestamp: now, head: s.hdr()},
		CompactionID: s.model.nextCompaction, Type: "MAJOR", DB: db, Table: table, PartName: part})
	if err != nil {
		return err
	}
	t.data.EventID = e.ID
	return nil
}

// lockedByTxn refuses a change to a table that an open transaction writes.
func (s *Server) lockedByTxn(t *tableState) error {
	for _, id := range sortedTxnIDs(s.model.txns) {
		for _, w := range s.model.txns[id].writes {
			if w.db == t.DB && w.table == t.Name {
				return fmt.Errorf("hmstest: table %s.%s: %w %d (commit or abort it first)", t.DB, t.Name, ErrTxnLocked, id)
			}
		}
	}
	return nil
}

func sortedTxnIDs(m map[int64]*txnState) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// OpenTxns lists the open transactions' ids, ascending.
func (s *Server) OpenTxns() []int64 {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	return sortedTxnIDs(s.model.txns)
}

// TransactionalData returns, for every transactional table, what readers of it
// see: database → table → TableData.
func (s *Server) TransactionalData() map[string]map[string]TableData {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	out := map[string]map[string]TableData{}
	for name, d := range s.model.dbs {
		for tn, t := range d.tables {
			if !t.Transactional {
				continue
			}
			if out[name] == nil {
				out[name] = map[string]TableData{}
			}
			td := t.data
			td.Partitions = maps.Clone(td.Partitions)
			out[name][tn] = td
		}
	}
	return out
}
