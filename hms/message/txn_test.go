package message

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// txnCase is one transaction event in Hive's layout (reference §3) and what
// DecodeTxn must read from it.
type txnCase struct {
	name string
	ev   Event
	want Txn
}

// hive3Header is how Hive 3.1.3 fills a transaction event's header: the
// string "null" and a single space.
func hive3Txn(id int64, typ, msg string) Event {
	return Event{ID: id, Time: 1700000000, Type: typ, DB: "null", Table: " ", Message: msg}
}

func txnCases() []txnCase {
	return []txnCase{
		{name: "open, range (Hive 3.1 and 4 write txnIds null)",
			ev:   hive3Txn(1, EventOpenTxn, `{"txnIds":null,"timestamp":1700000000,"fromTxnId":41,"toTxnId":43,`+head[:len(head)-1]+`}`),
			want: Txn{Kind: TxnOpen, TxnID: 41}},
		{name: "open, listed",
			ev:   hive3Txn(2, EventOpenTxn, `{"txnIds":[9,7,8],"timestamp":1,"fromTxnId":null,"toTxnId":null}`),
			want: Txn{Kind: TxnOpen, TxnID: 7}},
		{name: "alloc, Hive 3.1 header, table from the body",
			ev:   hive3Txn(3, EventAllocWriteID, `{`+head+`"txnIdList":[42],"writeIdList":[1],"dbName":"sales","tableName":"Orders","timestamp":1700000000}`),
			want: Txn{Kind: TxnAlloc, TxnIDs: []int64{42}, DB: "sales", Table: "orders"}},
		{name: "alloc of a batch of transactions",
			ev:   Event{ID: 4, Type: EventAllocWriteID, DB: "sales", Table: "orders", Message: `{"txnIdList":[5,6,7],"writeIdList":[3,4,5],"dbName":"sales","tableName":"orders"}`},
			want: Txn{Kind: TxnAlloc, TxnIDs: []int64{5, 6, 7}, DB: "sales", Table: "orders"}},
		{name: "commit, Hive 3.1",
			ev:   hive3Txn(5, EventCommitTxn, `{"txnid":42,"timestamp":1700000001,`+head[:len(head)-1]+`}`),
			want: Txn{Kind: TxnCommit, TxnID: 42}},
		{name: "commit, Hive 4 (the REPL fields null)",
			ev: hive3Txn(6, EventCommitTxn, `{"txnid":42,"timestamp":1,"writeIds":null,"databases":null,"tables":null,"partitions":null,`+
				`"tableObjs":null,"partitionObjs":null,"files":null,`+head[:len(head)-1]+`}`),
			want: Txn{Kind: TxnCommit, TxnID: 42}},
		{name: "abort, Hive 4 dbsUpdated",
			ev:   hive3Txn(7, EventAbortTxn, `{"txnid":43,"timestamp":1,"dbsUpdated":["sales"],`+head[:len(head)-1]+`}`),
			want: Txn{Kind: TxnAbort, TxnID: 43}},
		{name: "another catalog's event is not this decoder's",
			ev:   Event{ID: 8, Type: EventCommitTxn, Catalog: "spark", Message: `{"txnid":1}`},
			want: Txn{}},
		{name: "not a transaction event",
			ev:   Event{ID: 9, Type: EventCreateTable, Message: `{"db":"a","table":"b"}`},
			want: Txn{}},
	}
}

func TestDecodeTxnEvents(t *testing.T) {
	for _, c := range txnCases() {
		for _, format := range []string{FormatJSON, FormatGzip} {
			ev := c.ev
			ev.Format = format
			if format == FormatGzip {
				ev.Message = gzipMessage(t, ev.Message)
			}
			got, err := NewDecoder("").DecodeTxn(ev)
			if err != nil {
				t.Errorf("%s (%s): %v", c.name, format, err)
				continue
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s (%s):\n got %+v\nwant %+v", c.name, format, got, c.want)
			}
			// Decode maps none of them to a change: the state does.
			if descs, err := NewDecoder("").Decode(ev); IsTxnEvent(ev.Type) && (err != nil || descs != nil) {
				t.Errorf("%s (%s): Decode = %v, %v; want nothing", c.name, format, descs, err)
			}
		}
	}
}

func TestDecodeTxnRefusesWhatIsNotHives(t *testing.T) {
	for _, c := range []struct {
		name, typ, msg, says string
	}{
		{"commit without txnid", EventCommitTxn, `{"timestamp":1}`, "no txnid"},
		{"commit with a string txnid", EventCommitTxn, `{"txnid":"42"}`, "want an integer"},
		{"negative txnid", EventAbortTxn, `{"txnid":-3}`, "no txnid"},
		{"open without ids", EventOpenTxn, `{"txnIds":null,"fromTxnId":null}`, "neither txnIds nor fromTxnId"},
		{"alloc without a table", EventAllocWriteID, `{"txnIdList":[1],"dbName":"sales","tableName":null}`, "does not name the table"},
		{"alloc naming the table \"null\"", EventAllocWriteID, `{"txnIdList":[1],"dbName":"null","tableName":" "}`, "does not name the table"},
		{"alloc without transactions", EventAllocWriteID, `{"txnIdList":[],"dbName":"a","tableName":"b"}`, "lists no transaction"},
		{"alloc with a float", EventAllocWriteID, `{"txnIdList":[1.5],"dbName":"a","tableName":"b"}`, "invalid JSON"},
		{"truncated", EventAllocWriteID, `{"txnIdList":[1,2`, "unexpected end"},
		{"trailing garbage", EventCommitTxn, `{"txnid":1}x`, "want end of text"},
	} {
		_, err := NewDecoder("").DecodeTxn(Event{ID: 77, Type: c.typ, Message: c.msg})
		var de *DecodeError
		if !errors.As(err, &de) || de.EventID != 77 || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want a *DecodeError for event 77 saying %q", c.name, err, c.says)
		}
	}
}

// A txnIdList of a million ids is refused without holding it: the list is
// capped at MaxAllocTxnIDs and each id is counted against the message's budget.
func TestDecodeTxnBoundsTheAllocatedList(t *testing.T) {
	ids := strings.Repeat("1,", 1_000_000) + "1"
	for _, format := range []string{FormatJSON, FormatGzip} {
		msg := `{"txnIdList":[` + ids + `],"dbName":"a","tableName":"b"}`
		if format == FormatGzip {
			msg = gzipMessage(t, msg)
		}
		got, err := NewDecoder("").DecodeTxn(Event{ID: 78, Type: EventAllocWriteID, Format: format, Message: msg})
		if err == nil || !strings.Contains(err.Error(), "more than 65536 transactions") {
			t.Errorf("%s: %d ids gave %d ids, %v; want refused", format, 1_000_001, len(got.TxnIDs), err)
		}
	}
	// At the bound, the list is read whole.
	atBound := strings.TrimSuffix(strings.Repeat("7,", MaxAllocTxnIDs), ",")
	got, err := NewDecoder("").DecodeTxn(Event{ID: 79, Type: EventAllocWriteID, Message: `{"txnIdList":[` + atBound + `],"dbName":"a","tableName":"b"}`})
	if err != nil || len(got.TxnIDs) != MaxAllocTxnIDs {
		t.Errorf("%d ids: got %d, %v", MaxAllocTxnIDs, len(got.TxnIDs), err)
	}
	// OPEN_TXN keeps only the lowest id of its list, whatever its length.
	got, err = NewDecoder("").DecodeTxn(Event{ID: 80, Type: EventOpenTxn, Message: `{"txnIds":[` + ids + `,0]}`})
	if err != nil || got.TxnID != 0 {
		t.Errorf("open of a million ids: %+v, %v; want the lowest, 0", got, err)
	}
}

func TestDecodeCompaction(t *testing.T) {
	for _, c := range []struct {
		name, msg string
		op        string
		parts     []string
	}{
		{"unpartitioned", `{"txnid":50,"compactionId":3,"type":"MAJOR","dbname":"sales","tableName":"Orders","partName":null,` + head + `"timestamp":1}`, "REFRESH_TABLE", nil},
		{"partitioned", `{"txnid":51,"compactionId":4,"type":"MINOR","dbname":"sales","tableName":"orders","partName":"dt=2024-01-01/region=eu","timestamp":1}`, "REFRESH_PARTITIONS", []string{"dt=2024-01-01/region=eu"}},
	} {
		for _, format := range []string{FormatJSON, FormatGzip} {
			msg := c.msg
			if format == FormatGzip {
				msg = gzipMessage(t, msg)
			}
			got, err := NewDecoder("").Decode(Event{ID: 60, Time: 9, Type: EventCommitCompaction, Format: format, Message: msg})
			if err != nil || len(got) != 1 {
				t.Errorf("%s (%s): %v, %v", c.name, format, got, err)
				continue
			}
			d := got[0]
			if string(d.Op) != c.op || d.DB != "sales" || d.Table != "orders" || !reflect.DeepEqual(d.Partitions, c.parts) || d.EventID != 60 || d.UpdateTime != 9 {
				t.Errorf("%s (%s): %+v; want %s sales.orders %q", c.name, format, d, c.op, c.parts)
			}
		}
	}
	if _, err := NewDecoder("").Decode(Event{ID: 61, Type: EventCommitCompaction, Message: `{"dbname":"sales","tableName":null}`}); err == nil {
		t.Error("a compaction naming no table decoded")
	}
}

func TestAttributeTxnEvents(t *testing.T) {
	dec := NewDecoder("")
	for _, c := range []struct {
		name string
		ev   Event
		want string
	}{
		{"alloc, Hive 3.1 header: the body's table", hive3Txn(1, EventAllocWriteID, `{"dbName":"sales","tableName":"orders","txnIdList":[1,`), "[sales.orders]"},
		{"alloc, Hive 4 header", Event{ID: 2, Type: EventAllocWriteID, DB: "sales", Table: "orders", Message: `{`}, "[sales.orders]"},
		{"compaction, the body's table", Event{ID: 3, Type: EventCommitCompaction, Message: `{"txnid":1,"dbname":"sales","tableName":"orders","partName":[`}, "[sales.orders]"},
		{"commit names no table: the catalog", hive3Txn(4, EventCommitTxn, `{"txnid":`), "[]"},
		{"open: the catalog", hive3Txn(5, EventOpenTxn, `{`), "[]"},
		{"alloc whose body is unreadable: the catalog", hive3Txn(6, EventAllocWriteID, `{"txnIdList":x`), "[]"},
	} {
		var names []string
		for _, o := range dec.Attribute(c.ev) {
			names = append(names, o.String())
		}
		if got := "[" + strings.Join(names, " ") + "]"; got != c.want {
			t.Errorf("%s: attributed to %s, want %s", c.name, got, c.want)
		}
	}
}

// FuzzDecodeTxn checks that any transaction event reads to a Txn that says what
// a state can use (a kind, ids not negative, at most MaxAllocTxnIDs, names) or
// to a *DecodeError naming the event, and never panics.
func FuzzDecodeTxn(f *testing.F) {
	for _, c := range txnCases() {
		f.Add(c.ev.Type, FormatJSON, c.ev.Message)
		f.Add(c.ev.Type, FormatGzip, gzipMessage(f, c.ev.Message))
	}
	f.Add(EventAllocWriteID, FormatJSON, `{"txnIdList":[1,2,3],"dbName":"\u00e9","tableName":"\ud800"}`)
	dec := NewDecoder("")
	f.Fuzz(func(t *testing.T, typ, format, message string) {
		ev := Event{ID: 42, Type: typ, Format: format, Message: message}
		got, err := dec.DecodeTxn(ev)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.EventID != 42 {
				t.Fatalf("error %v is not a *DecodeError for event 42", err)
			}
			return
		}
		switch got.Kind {
		case TxnNone:
			if IsTxnEvent(typ) {
				t.Fatalf("a %s event read as none", typ)
			}
		case TxnAlloc:
			if len(got.TxnIDs) == 0 || len(got.TxnIDs) > MaxAllocTxnIDs || got.DB == "" || got.Table == "" {
				t.Fatalf("alloc %+v", got)
			}
			for _, id := range got.TxnIDs {
				if id < 0 {
					t.Fatalf("alloc of txn %d", id)
				}
			}
		default:
			if got.TxnID < 0 {
				t.Fatalf("%+v", got)
			}
		}
	})
}
