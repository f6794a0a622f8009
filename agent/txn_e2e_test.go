package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// Writes to a transactional table, end to end: real etcd (the state beside the
// cursors), the fake metastore's Thrift, the native FE protocol. Events as Hive
// 3.1.3 writes them: the header's database "null", its table " ".

func txnEvent(typ, body string) message.Event {
	return message.Event{Time: int32(time.Now().Unix()), Type: typ, DB: "null", Table: " ", Format: message.FormatJSON, Message: body}
}

func openAndAlloc(txn int64, db, table string) []message.Event {
	return []message.Event{
		txnEvent(message.EventOpenTxn, fmt.Sprintf(`{"txnIds":null,"timestamp":1,"fromTxnId":%d,"toTxnId":%d,"server":"","servicePrincipal":""}`, txn, txn)),
		txnEvent(message.EventAllocWriteID, fmt.Sprintf(`{"server":"","servicePrincipal":"","txnIdList":[%d],"writeIdList":[1],"dbName":%q,"tableName":%q,"timestamp":1}`, txn, db, table)),
	}
}

func commitOf(txn int64) message.Event {
	return txnEvent(message.EventCommitTxn, fmt.Sprintf(`{"txnid":%d,"timestamp":1,"server":"","servicePrincipal":""}`, txn))
}

// refreshesOf lists what FE i received for event id, as "OP db.table".
func (h *harness) refreshesOf(i int, id int64) []string {
	var got []string
	for _, b := range h.fes[i].Changes() {
		for _, c := range b.Changes {
			if c.EventID == id {
				got = append(got, string(c.Op)+" "+c.DB+"."+c.Table)
			}
		}
	}
	return got
}

func TestTxnCommitAfterARestartAndAFailoverRefreshesTheTable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.mustHMS(h.hms.CreateDatabase("sales"))
	h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "sales", Name: "orders"}))
	h.startConverged()

	// Stopped after applying the allocation, started again before the
	// commit: every member.
	h.hms.Append(openAndAlloc(7, "sales", "orders")...)
	h.awaitConverged(converge)
	before := h.allFullRefreshes()
	for _, o := range append([]*member{}, h.members...) {
		o.stop()
	}
	_, commit := h.hms.Append(commitOf(7))
	for i := range 3 {
		h.start(i, memberOpts{})
	}
	h.awaitConverged(converge)
	for i := range 3 {
		if got := h.refreshesOf(i, commit); len(got) != 1 || got[0] != "REFRESH_TABLE sales.orders" {
			t.Errorf("FE %d got %v for the commit (event %d) after its sidecar restarted; want REFRESH_TABLE sales.orders", i, got, commit)
		}
	}
	h.expectFullRefreshesSince(before, 0, "a restart between allocation and commit")

	// A new master between the allocation and the commit.
	m := h.master(10 * time.Second)
	h.hms.Append(openAndAlloc(8, "sales", "orders")...)
	h.awaitConverged(converge)
	m.crash()
	next := h.master(20 * time.Second)
	_, commit = h.hms.Append(commitOf(8))
	h.awaitApplied(next.i)
	if got := h.refreshesOf(next.i, commit); len(got) != 1 || got[0] != "REFRESH_TABLE sales.orders" {
		t.Errorf("the new master's FE got %v for the commit (event %d); want REFRESH_TABLE sales.orders", got, commit)
	}
}
