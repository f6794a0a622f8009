package hmstest_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// replay applies descriptors to a catalog model the way an FE cache would, written
// independently of the server's model, so that the log and the truth can be
// compared.
func replay(t *testing.T, cat map[string]map[string][]string, d change.Descriptor) {
	t.Helper()
	switch d.Op {
	case change.RegisterDatabase:
		cat[d.DB] = map[string][]string{}
	case change.UnregisterDatabase:
		delete(cat, d.DB)
	case change.RenameDatabase:
		cat[d.DBAfter] = cat[d.DB]
		delete(cat, d.DB)
	case change.RegisterTable:
		cat[d.DB][d.Table] = []string{}
	case change.UnregisterTable:
		delete(cat[d.DB], d.Table)
	case change.RenameTable:
		parts := cat[d.DB][d.Table]
		delete(cat[d.DB], d.Table)
		cat[d.DBAfter][d.TableAfter] = parts
	case change.AddPartitions:
		p := append(cat[d.DB][d.Table], d.Partitions...)
		slices.Sort(p)
		cat[d.DB][d.Table] = p
	case change.DropPartitions:
		cat[d.DB][d.Table] = slices.DeleteFunc(cat[d.DB][d.Table], func(s string) bool { return slices.Contains(d.Partitions, s) })
	case change.RefreshTable, change.RefreshPartitions:
		if _, ok := cat[d.DB][d.Table]; !ok {
			t.Errorf("event %d refreshes %s.%s, which does not exist", d.EventID, d.DB, d.Table)
		}
	}
}

func TestWorkloadLogMatchesTruth(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	w := hmstest.Workload{Seed: 7, Events: 600, Databases: 3, Tables: 12}
	must(t, w.Run(context.Background(), s))
	if got := s.CurrentEventID(); got != 600 {
		t.Fatalf("workload appended %d events, want 600", got)
	}
	cat := map[string]map[string][]string{}
	types := map[string]int{}
	for _, e := range s.Events() {
		types[e.Type]++
		ds, err := message.Decoder{}.Decode(e)
		must(t, err)
		for _, d := range ds {
			replay(t, cat, d)
		}
	}
	if want := s.Snapshot(); !reflect.DeepEqual(cat, want) {
		t.Errorf("replayed log:\n%v\ntruth:\n%v", cat, want)
	}
	for _, typ := range []string{"ADD_PARTITION", "ALTER_PARTITION", "DROP_PARTITION", "INSERT", "ALTER_TABLE", "CREATE_TABLE", "OPEN_TXN"} {
		if types[typ] == 0 {
			t.Errorf("workload wrote no %s event (types: %v)", typ, types)
		}
	}
}

func TestPreloadMix(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	must(t, hmstest.Preload(s, 2000, hmstest.Mix{}))
	evs := s.Events()
	if len(evs) != 2000 {
		t.Fatalf("Preload appended %d events, want 2000", len(evs))
	}
	var partition, gz int
	for _, e := range evs {
		if e.Type == "ADD_PARTITION" || e.Type == "ALTER_PARTITION" || e.Type == "DROP_PARTITION" {
			partition++
		}
		if e.Format == message.FormatGzip {
			gz++
		}
	}
	// 70% partition steps over ~1950 steps after the 51 set-up events: well
	// above 60% of all events; half the messages gzip.
	if partition < 1200 || partition > 1500 {
		t.Errorf("%d partition events of 2000, want about 70%%", partition)
	}
	if gz != 1000 {
		t.Errorf("%d gzip messages of 2000, want 1000", gz)
	}
	if n := len(s.Snapshot()["wl1_db0"]); n < 45 {
		t.Errorf("%d tables after Preload, want about 50", n)
	}
}

func TestWorkloadStopsWithContext(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- hmstest.Workload{Rate: 1000, Seed: 3}.Run(ctx, s) }()
	for s.CurrentEventID() < 30 {
		select {
		case err := <-done:
			t.Fatalf("workload ended early: %v", err)
		default:
		}
		runtime_Gosched()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// TestTransactionalWorkload: with transactional steps the log still matches the
// truth, holds every kind of transaction event at about the documented share,
// logs no INSERT into a transactional table, and carries what a consumer needs
// to know what readers see: replaying ALLOC_WRITE_ID_EVENT bodies up to their
// COMMIT_TXN (and COMMIT_COMPACTION_EVENT) gives every transactional table's
// committed write id and the event after which readers see it.
func TestTransactionalWorkload(t *testing.T) {
	for _, style := range []hmstest.TxnStyle{hmstest.TxnHive4, hmstest.TxnHive3} {
		s := hmstest.NewServer(hmstest.WithTxnStyle(style))
		const n = 3000
		w := hmstest.Workload{Seed: 11, Events: n, Databases: 2, Tables: 16, Mix: hmstest.DefaultTxnMix}
		must(t, w.Run(context.Background(), s))
		if got := s.CurrentEventID(); got != n {
			t.Fatalf("style %d: workload appended %d events, want %d", style, got, n)
		}
		acid := map[string]bool{} // db.table of the transactional tables ever created
		cat := map[string]map[string][]string{}
		types := map[string]int{}
		type alloc struct {
			table   string
			writeID int64
		}
		pending := map[int64][]alloc{}
		got := map[string]hmstest.TableData{}
		for _, e := range s.Events() {
			types[e.Type]++
			text := decodeText(t, e)
			var body struct {
				DB, Table   string
				TableObj    string  `json:"tableObjJson"`
				DBName      string  `json:"dbName"`
				TableName   string  `json:"tableName"`
				TxnIDList   []int64 `json:"txnIdList"`
				WriteIDList []int64 `json:"writeIdList"`
				TxnID       int64   `json:"txnid"`
				CDB         string  `json:"dbname"`
			}
			must(t, json.Unmarshal([]byte(text), &body))
			switch e.Type {
			case "CREATE_TABLE":
				if strings.Contains(body.TableObj, `"transactional_properties"`) {
					acid[body.DB+"."+body.Table] = true
				}
			case "ALTER_TABLE": // a rename moves what readers see (the header has the new names)
				if old, nw := body.DB+"."+body.Table, e.DB+"."+e.Table; old != nw {
					if d, ok := got[old]; ok {
						got[nw] = d
						delete(got, old)
					}
					acid[nw] = acid[old]
				}
			case "DROP_TABLE":
				delete(got, body.DB+"."+body.Table)
			case "INSERT":
				if acid[body.DB+"."+body.Table] {
					t.Errorf("style %d: event %d: INSERT into the transactional table %s.%s", style, e.ID, body.DB, body.Table)
				}
			case "ALLOC_WRITE_ID_EVENT":
				for i, txn := range body.TxnIDList {
					pending[txn] = append(pending[txn], alloc{body.DBName + "." + body.TableName, body.WriteIDList[i]})
				}
			case "COMMIT_TXN":
				for _, a := range pending[body.TxnID] {
					d := got[a.table]
					d.WriteID, d.EventID = max(d.WriteID, a.writeID), e.ID
					got[a.table] = d
				}
				delete(pending, body.TxnID)
			case "ABORT_TXN":
				delete(pending, body.TxnID)
			case "COMMIT_COMPACTION_EVENT":
				d := got[body.CDB+"."+body.TableName]
				d.EventID = e.ID
				got[body.CDB+"."+body.TableName] = d
			}
			ds, err := message.Decoder{}.Decode(e)
			must(t, err)
			for _, d := range ds {
				replay(t, cat, d)
			}
		}
		if want := s.Snapshot(); !reflect.DeepEqual(cat, want) {
			t.Errorf("style %d: replayed log:\n%v\ntruth:\n%v", style, cat, want)
		}
		want := map[string]hmstest.TableData{}
		for db, tables := range s.TransactionalData() {
			for tn, d := range tables {
				if d.EventID != 0 {
					want[db+"."+tn] = hmstest.TableData{WriteID: d.WriteID, EventID: d.EventID}
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("style %d: committed writes replayed from the log:\n%v\nwhat readers see:\n%v", style, got, want)
		}
		wantTypes := []string{"OPEN_TXN", "ALLOC_WRITE_ID_EVENT", "COMMIT_TXN", "ABORT_TXN"}
		if style == hmstest.TxnHive4 {
			wantTypes = append(wantTypes, "COMMIT_COMPACTION_EVENT")
		}
		for _, typ := range wantTypes {
			if types[typ] == 0 {
				t.Errorf("style %d: no %s event (types: %v)", style, typ, types)
			}
		}
		// 5% transactional steps and 10% TxnStats (half of which open or end
		// transactions): well under a fifth of the events are transaction events.
		txnEvents := types["OPEN_TXN"] + types["ALLOC_WRITE_ID_EVENT"] + types["COMMIT_TXN"] + types["ABORT_TXN"] + types["COMMIT_COMPACTION_EVENT"]
		if txnEvents < n*5/100 || txnEvents > n*20/100 {
			t.Errorf("style %d: %d transaction events of %d, want between 5%% and 20%%", style, txnEvents, n)
		}
		if len(acid) == 0 {
			t.Errorf("style %d: no transactional table created", style)
		}
		s.Close()
	}
}
