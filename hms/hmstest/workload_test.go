package hmstest_test

import (
	"context"
	"reflect"
	"slices"
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
