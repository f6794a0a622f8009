package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// The push-down scenarios: a catalog that includes database a only, its master
// asking the fake metastore for a's events by name (the fake filters as Hive 4
// does, header rules included).

func (h *harness) mustHMS(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// awaitApplied waits until FE i applied up to the metastore's current id.
func (h *harness) awaitApplied(i int) {
	h.t.Helper()
	await(h.t, converge, fmt.Sprintf("FE %d applied up to the metastore's current id", i), func() (bool, string) {
		got, cur := h.fes[i].AppliedEventID(testCatalog), h.hms.CurrentEventID()
		return got == cur, fmt.Sprintf("FE at %d, metastore at %d", got, cur)
	})
}

// checkDatabase fails unless FE i holds database db as the metastore does.
func (h *harness) checkDatabase(i int, db string) {
	h.t.Helper()
	want, got := fetest.Truth{db: h.hms.Snapshot()[db]}, fetest.Truth{db: h.fes[i].Snapshot(testCatalog)[db]}
	if d := fetest.Diff(want, got); d != "" {
		h.t.Errorf("FE %d, database %s: %s", i, db, d)
	}
}

// checkPushedDown fails unless the metastore was asked for database db's events
// by name.
func (h *harness) checkPushedDown(db string) {
	h.t.Helper()
	for _, f := range h.hms.Fetches() {
		if f.DB == db {
			return
		}
	}
	h.t.Errorf("no fetch asked the metastore for database %s's events: %+v", db, h.hms.Fetches())
}

// A table renamed out of the included database into an excluded one: Hive logs
// the ALTER_TABLE under the new database, which a's stream does not return;
// the stream of renames does, and the FE drops a.t.
func TestPushdownRenameOutOfTheIncludedDatabase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{include: []string{`a\..*`}})
	h.mustHMS(h.hms.CreateDatabase("a"))
	h.mustHMS(h.hms.CreateDatabase("x"))
	h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "a", Name: "t"}))
	h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "a", Name: "u"}))
	h.hms.RecordFetches()
	h.start(0, memberOpts{})
	h.awaitApplied(0)
	if _, ok := h.fes[0].Snapshot(testCatalog)["a"]["t"]; !ok {
		t.Fatalf("FE 0 lacks a.t after its first refresh: %v", h.fes[0].Snapshot(testCatalog))
	}

	h.mustHMS(h.hms.RenameTable("a", "t", "x", "t2"))
	h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "x", Name: "noise"}))
	h.mustHMS(h.hms.AlterTable("a", "u"))
	h.awaitApplied(0)
	if _, ok := h.fes[0].Snapshot(testCatalog)["a"]["t"]; ok {
		t.Errorf("FE 0 still has a.t, renamed to x.t2: %v", h.fes[0].Snapshot(testCatalog)["a"])
	}
	h.checkDatabase(0, "a")
	h.checkPushedDown("a")
}

// Events cleaned before the master read them, while it reads a's events only:
// the filtered streams skip ids all the time, yet only the cleaning is a gap,
// and it costs exactly one full refresh.
func TestPushdownGapFullRefreshOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{include: []string{`a\..*`}})
	h.mustHMS(h.hms.CreateDatabase("a"))
	h.mustHMS(h.hms.CreateDatabase("x"))
	h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "a", Name: "t"}))
	h.hms.RecordFetches()
	m := h.start(0, memberOpts{})
	h.awaitApplied(0)
	base := h.fullRefreshes(0)
	noise := 0
	writeBoth := func(n int) {
		for range n {
			h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "x", Name: fmt.Sprintf("n%d", noise)}))
			h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "x", Name: fmt.Sprintf("n%d", noise+1)}))
			h.mustHMS(h.hms.AlterTable("a", "t"))
			noise += 2
		}
	}
	writeBoth(5) // filtered jumps only: no refresh
	h.awaitApplied(0)
	if got := h.fullRefreshes(0) - base; got != 0 {
		t.Fatalf("%d full refreshes over filtered jumps, want none", got)
	}

	h.pauseMaster(m)
	cursor := h.masterCursor()
	writeBoth(10)
	h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "a", Name: "lost"})) // cleaned below: only a refresh brings it
	writeBoth(5)
	h.hms.Clean(cursor + 40)
	h.setPause(false)
	h.awaitApplied(0)
	h.checkDatabase(0, "a")
	writeBoth(5)
	h.awaitApplied(0)
	h.checkDatabase(0, "a")
	if got := h.fullRefreshes(0) - base; got != 1 {
		t.Errorf("%d full refreshes after the cleaning, want 1", got)
	}
	if got := m.metric("hmssync_full_refreshes_total", `reason="gap"`); got != 1 {
		t.Errorf("hmssync_full_refreshes_total{reason=\"gap\"} = %v, want 1", got)
	}
	h.checkPushedDown("a")
}

// Followers read the whole log (bounded by the master cursor), never filtered:
// a filtered fetch's ids are bounded by the metastore's current id, not by the
// number of events asked for, so it could read past the master cursor.
// NoPushdown (filter_pushdown: false) keeps the master on the whole log too.
func TestPushdownMasterOnly(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		h := newHarness(t, harnessOpts{include: []string{`a\..*`}, noPushdown: off})
		h.mustHMS(h.hms.CreateDatabase("a"))
		h.mustHMS(h.hms.CreateDatabase("x"))
		h.hms.RecordFetches()
		h.start(0, memberOpts{})
		h.start(1, memberOpts{})
		m := h.master(5 * time.Second)
		// The initial full refresh first: one that came after the tables
		// below would bring them with no fetch at all.
		h.awaitApplied(0)
		h.awaitApplied(1)
		for i := range 10 {
			h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "x", Name: fmt.Sprintf("x%d", i)}))
			h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "a", Name: fmt.Sprintf("a%d", i)}))
		}
		h.awaitApplied(0)
		h.awaitApplied(1)
		h.checkDatabase(0, "a")
		h.checkDatabase(1, "a")
		filtered := map[string]int{}
		for _, f := range h.hms.Fetches() {
			if f.DB != "" {
				filtered[f.User]++
			}
		}
		switch {
		case off && len(filtered) > 0:
			t.Errorf("NoPushdown: filtered fetches %v", filtered)
		case !off && (filtered[m.name] == 0 || len(filtered) != 1):
			t.Errorf("filtered fetches by member %v; want some by the master %s only", filtered, m.name)
		}
	}
}

// hmssync_catalog_pushdown_databases tells the operator whether push-down is
// in effect: the master of a catalog including database a asks for one
// database by name; with filter_pushdown off it reads the whole log (0).
func TestPushdownDatabasesGauge(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("filter_pushdown_off=%v", off), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOpts{include: []string{`a\..*`}, noPushdown: off})
			h.mustHMS(h.hms.CreateDatabase("a"))
			m := h.start(0, memberOpts{})
			h.awaitApplied(0)
			h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "a", Name: "t"})) // fetched, not refreshed
			h.awaitApplied(0)
			want := 1.0
			if off {
				want = 0
			}
			label := fmt.Sprintf("catalog=%q", testCatalog)
			if got := m.metric("hmssync_catalog_pushdown_databases", label); got != want {
				t.Errorf("hmssync_catalog_pushdown_databases{%s} = %v, want %v", label, got, want)
			}
		})
	}
}

// Transaction events name no database in their header (Hive 3.1 writes the
// string "null" and " "): a master reading only database a's events still
// reads them, through the cross-database stream, and the commit of a write to
// a.t refreshes it.
func TestPushdownKeepsTransactionEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{include: []string{`a\..*`}})
	h.mustHMS(h.hms.CreateDatabase("a"))
	h.mustHMS(h.hms.CreateTable(hmstest.Table{DB: "a", Name: "t"}))
	h.hms.RecordFetches()
	h.start(0, memberOpts{})
	h.awaitApplied(0)

	txn := func(typ, body string) message.Event {
		return message.Event{Time: 1700000000, Type: typ, DB: "null", Table: " ", Format: message.FormatJSON, Message: body}
	}
	_, commit := h.hms.Append(
		txn(message.EventOpenTxn, `{"txnIds":null,"timestamp":1,"fromTxnId":7,"toTxnId":7,"server":"","servicePrincipal":""}`),
		txn(message.EventAllocWriteID, `{"server":"","servicePrincipal":"","txnIdList":[7],"writeIdList":[1],"dbName":"a","tableName":"t","timestamp":1}`),
		txn(message.EventCommitTxn, `{"txnid":7,"timestamp":1,"server":"","servicePrincipal":""}`))
	h.awaitApplied(0)
	var got []string
	for _, b := range h.fes[0].State().Changes {
		for _, c := range b.Changes {
			if c.EventID == commit {
				got = append(got, string(c.Op)+" "+c.DB+"."+c.Table)
			}
		}
	}
	if len(got) != 1 || got[0] != "REFRESH_TABLE a.t" {
		t.Errorf("the commit (event %d) gave the FE %v; want REFRESH_TABLE a.t", commit, got)
	}
	h.checkPushedDown("a")
}
