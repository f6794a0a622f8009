package agent

import (
	"testing"

	"github.com/hmssync/hmssync/hms/message"
)

// A wait on a database counts the events that can change it: a COMMIT_TXN,
// which names no database, refreshes the tables its transaction wrote; an
// allocation or compaction counts in its own database only.
func TestConcernsWaitCountsTheCommitOfATransaction(t *testing.T) {
	p := waitParams{catalog: "hive", db: "acid_t", table: "orders"}
	for _, c := range []struct {
		ev   message.Event
		want bool
	}{
		{message.Event{Type: message.EventCommitTxn}, true},                                   // Hive 4: no header database
		{message.Event{Type: message.EventCommitTxn, DB: "null", Table: " "}, true},           // Hive 3.1
		{message.Event{Type: message.EventAllocWriteID, DB: "acid_t", Table: "orders"}, true}, // the same table
		{message.Event{Type: message.EventAllocWriteID, DB: "other", Table: "orders"}, false},
		{message.Event{Type: message.EventOpenTxn}, false},
		{message.Event{Type: message.EventAbortTxn}, false},
		{message.Event{Type: message.EventCommitCompaction, DB: "acid_t", Table: "orders"}, true},
		{message.Event{Type: message.EventCommitCompaction, DB: "acid_t", Table: "lines"}, false},
	} {
		if got := concernsWait(c.ev, p); got != c.want {
			t.Errorf("concernsWait(%s %q.%q) = %v; want %v", c.ev.Type, c.ev.DB, c.ev.Table, got, c.want)
		}
	}
}
