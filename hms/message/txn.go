package message

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hmssync/hmssync/change"
)

// Transaction events (reference §3, §5). Writes to transactional (ACID) tables
// log no INSERT: the metastore logs ALLOC_WRITE_ID_EVENT, naming the table and
// the transactions that write it, and later the transaction's COMMIT_TXN or
// ABORT_TXN, which name only the transaction. Which tables a commit makes
// visible is therefore known only to a reader that kept the allocations: the
// decoder reads each event on its own (DecodeTxn), the sidecar keeps the
// state. COMMIT_COMPACTION_EVENT names its table and is decoded by Decode.
const (
	EventOpenTxn          = "OPEN_TXN"
	EventCommitTxn        = "COMMIT_TXN"
	EventAbortTxn         = "ABORT_TXN"
	EventAllocWriteID     = "ALLOC_WRITE_ID_EVENT"
	EventCommitCompaction = "COMMIT_COMPACTION_EVENT"
)

// TxnKind is what a transaction event does to the open transactions.
type TxnKind int

const (
	// TxnNone: not a transaction event (or one of another catalog).
	TxnNone TxnKind = iota
	// TxnOpen: transactions were opened; Txn.TxnID is the lowest of them.
	TxnOpen
	// TxnAlloc: the transactions Txn.TxnIDs write Txn.DB.Txn.Table.
	TxnAlloc
	// TxnCommit: Txn.TxnID committed.
	TxnCommit
	// TxnAbort: Txn.TxnID aborted.
	TxnAbort
)

// MaxAllocTxnIDs bounds the transactions one ALLOC_WRITE_ID_EVENT may list.
// Hive lists one per transaction of a batch allocation (a streaming writer's
// transaction batch, a replicated allocation): tens, rarely thousands. A longer
// list is refused (a poison event) rather than held.
const MaxAllocTxnIDs = 1 << 16

// txnIDBytes is what one listed transaction costs in memory, counted against the
// message's budget (nameBudget) on top of MaxAllocTxnIDs.
const txnIDBytes = 8

// Txn is what one transaction event says.
type Txn struct {
	Kind TxnKind
	// TxnID is the committed or aborted transaction, or the lowest one an
	// OPEN_TXN opened.
	TxnID int64
	// TxnIDs are the transactions an ALLOC_WRITE_ID_EVENT allocates write
	// ids for (at most MaxAllocTxnIDs), all writing DB.Table.
	TxnIDs    []int64
	DB, Table string
}

// txnTypes are the event types DecodeTxn reads.
var txnTypes = map[string]TxnKind{
	EventOpenTxn: TxnOpen, EventAllocWriteID: TxnAlloc, EventCommitTxn: TxnCommit, EventAbortTxn: TxnAbort,
}

// IsTxnEvent reports whether events of type t are read by DecodeTxn.
func IsTxnEvent(t string) bool { return txnTypes[t] != TxnNone }

// DecodeTxn reads a transaction event (OPEN_TXN, ALLOC_WRITE_ID_EVENT,
// COMMIT_TXN, ABORT_TXN; json-0.2 or gzip(json-2.0)). Other types, and events
// whose catName names another catalog, give Kind TxnNone. The table of an
// ALLOC_WRITE_ID_EVENT comes from its body: Hive 3.1 writes the header's
// dbName as the string "null" and its tableName as " ". A message that cannot
// be read gives a *DecodeError.
func (d Decoder) DecodeTxn(e Event) (Txn, error) {
	kind := txnTypes[e.Type]
	if kind == TxnNone || !d.ownCatalog(e) {
		return Txn{}, nil
	}
	bufs := getDecodeBuffers()
	defer putDecodeBuffers(bufs)
	text, err := bufs.messageText(e)
	if err != nil {
		return Txn{}, &DecodeError{EventID: e.ID, EventType: e.Type, Reason: "undecodable message", Err: err}
	}
	budget := newNameBudget(len(text))
	t, err := scanTxn(text, kind, &budget)
	if err != nil {
		return Txn{}, &DecodeError{EventID: e.ID, EventType: e.Type, Reason: "invalid transaction message", Err: err}
	}
	return t, nil
}

// ownCatalog says whether e belongs to the decoder's catalog: it names none
// (transaction events never do), or the decoder's.
func (d Decoder) ownCatalog(e Event) bool {
	catalog := d.Catalog
	if catalog == "" {
		catalog = DefaultCatalog
	}
	return e.Catalog == "" || strings.EqualFold(e.Catalog, catalog)
}

// txnFields are the members of a transaction message.
type txnFields struct {
	txnID        int64
	hasTxnID     bool
	from         int64
	hasFrom      bool
	lowestListed int64 // the lowest of txnIds (OPEN_TXN)
	listed       int   // how many txnIds listed
	allocated    []int64
	allocSet     bool
	db, table    string
}

// scanTxn reads the members of a transaction message of kind.
func scanTxn(text []byte, kind TxnKind, budget *nameBudget) (Txn, error) {
	var f txnFields
	s := jsonScanner{b: text}
	err := s.object(func(key []byte) error {
		err := f.member(&s, string(key), kind, budget)
		if err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
		return nil
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return Txn{}, err
	}
	return f.txn(kind)
}

func (f *txnFields) member(s *jsonScanner, key string, kind TxnKind, budget *nameBudget) error {
	var err error
	switch {
	case key == "txnid" && (kind == TxnCommit || kind == TxnAbort):
		f.txnID, f.hasTxnID, err = optionalInt(s)
	case key == "fromTxnId" && kind == TxnOpen:
		f.from, f.hasFrom, err = optionalInt(s)
	case key == "txnIds" && kind == TxnOpen:
		err = f.openList(s)
	case key == "txnIdList" && kind == TxnAlloc:
		err = f.allocList(s, budget)
	case key == "dbName" && kind == TxnAlloc:
		f.db, _, err = s.str()
	case key == "tableName" && kind == TxnAlloc:
		f.table, _, err = s.str()
	default:
		err = s.skip()
	}
	return err
}

// optionalInt reads an integer or null (ok false).
func optionalInt(s *jsonScanner) (int64, bool, error) {
	if s.null() {
		return 0, false, nil
	}
	v, err := s.int()
	return v, err == nil, err
}

// openList reads OPEN_TXN's txnIds (null when the range fromTxnId..toTxnId
// says it): only the lowest id is kept, so a list of any length costs nothing.
func (f *txnFields) openList(s *jsonScanner) error {
	if s.null() {
		return nil
	}
	return s.array(func(int) error {
		v, err := s.int()
		if err == nil && (f.listed == 0 || v < f.lowestListed) {
			f.lowestListed = v
		}
		f.listed++
		return err
	})
}

// allocList reads ALLOC_WRITE_ID_EVENT's txnIdList, bounded by MaxAllocTxnIDs
// and by the message's budget.
func (f *txnFields) allocList(s *jsonScanner, budget *nameBudget) error {
	if s.null() {
		return nil
	}
	f.allocSet = true
	f.allocated = f.allocated[:0]
	return s.array(func(i int) error {
		if i >= MaxAllocTxnIDs {
			return fmt.Errorf("lists more than %d transactions; refused", MaxAllocTxnIDs)
		}
		if err := budget.takeBytes(txnIDBytes); err != nil {
			return err
		}
		v, err := s.int()
		if err != nil {
			return err
		}
		if v < 0 {
			return fmt.Errorf("transaction id %d is negative", v)
		}
		f.allocated = append(f.allocated, v)
		return nil
	})
}

// txn checks that the message of kind said what it must.
func (f *txnFields) txn(kind TxnKind) (Txn, error) {
	switch kind {
	case TxnCommit, TxnAbort:
		if !f.hasTxnID || f.txnID < 0 {
			return Txn{}, errors.New("message has no txnid")
		}
		return Txn{Kind: kind, TxnID: f.txnID}, nil
	case TxnOpen:
		switch {
		case f.listed > 0:
			return Txn{Kind: kind, TxnID: f.lowestListed}, nil
		case f.hasFrom && f.from >= 0:
			return Txn{Kind: kind, TxnID: f.from}, nil
		}
		return Txn{}, errors.New("message has neither txnIds nor fromTxnId")
	}
	// TxnAlloc
	if !f.allocSet || len(f.allocated) == 0 {
		return Txn{}, errors.New("message lists no transaction (txnIdList)")
	}
	if f.db == "" || f.table == "" || !usableName(f.db) || !usableName(f.table) {
		return Txn{}, fmt.Errorf("message does not name the table (dbName %q, tableName %q); invalid UTF-8 cannot name one either", f.db, f.table)
	}
	return Txn{Kind: kind, TxnIDs: f.allocated, DB: normaliseIdentifier(f.db), Table: normaliseIdentifier(f.table)}, nil
}

// usableName says whether a name from a message can name an object on the FE.
func usableName(n string) bool {
	_, ok := headerName(n)
	return ok
}

// decodeCompaction maps COMMIT_COMPACTION_EVENT (Hive 4): the compaction
// rewrote the table's (or one partition's) files, so an FE's file listing is
// stale. Fields: dbname, tableName, partName (null for an unpartitioned table;
// Hive's escaped partition name otherwise).
func (d *eventDecoder) decodeCompaction(text []byte) ([]change.Descriptor, error) {
	var db, table, part string
	var partSet bool
	s := jsonScanner{b: text}
	err := s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "dbname":
			db, _, err = s.str()
		case "tableName":
			table, _, err = s.str()
		case "partName":
			part, partSet, err = s.str()
		default:
			err = s.skip()
		}
		if err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
		return nil
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return nil, &DecodeError{EventID: d.e.ID, EventType: d.e.Type, Reason: "malformed message JSON", Err: err}
	}
	if !usableName(db) || !usableName(table) {
		return nil, fmt.Errorf("message does not name the table (dbname %q, tableName %q)", db, table)
	}
	if !partSet || part == "" {
		return []change.Descriptor{d.desc(change.RefreshTable, db, table)}, nil
	}
	if err := d.names.take(part); err != nil {
		return nil, err
	}
	r := d.desc(change.RefreshPartitions, db, table)
	r.Partitions = []string{part}
	return []change.Descriptor{r}, nil
}
