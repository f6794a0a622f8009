package hmstest_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hmssync/hmssync/hms/hmstest"
)

// A server loaded from another's saved state continues the same log: the same
// events and ids, the next id after the last one (no reset for a consumer), the
// same objects, and mutations that work on them.
func TestSaveAndLoadStateContinuesTheLog(t *testing.T) {
	a := hmstest.NewServer()
	defer a.Close()
	must(t, (hmstest.Workload{Seed: 3, Databases: 2, Tables: 5, Events: 60}).Run(context.Background(), a))
	a.Clean(10)
	var buf bytes.Buffer
	must(t, a.SaveState(&buf))

	b := hmstest.NewServer()
	defer b.Close()
	must(t, b.LoadState(bytes.NewReader(buf.Bytes())))
	if b.CurrentEventID() != a.CurrentEventID() || b.OldestEventID() != a.OldestEventID() {
		t.Fatalf("loaded log: current %d oldest %d, want %d and %d", b.CurrentEventID(), b.OldestEventID(), a.CurrentEventID(), a.OldestEventID())
	}
	if !reflect.DeepEqual(b.Events(), a.Events()) {
		t.Fatal("the loaded log's events differ from the saved ones")
	}
	if !reflect.DeepEqual(b.Snapshot(), a.Snapshot()) {
		t.Fatalf("loaded model %v, want %v", b.Snapshot(), a.Snapshot())
	}
	// Both go on in step: the same mutation appends the same id on each.
	for _, s := range []*hmstest.Server{a, b} {
		must(t, s.CreateTable(hmstest.Table{DB: "wl3_db0", Name: "after_restart", PartitionKeys: []string{"k"}}))
		must(t, s.AddPartitions("wl3_db0", "after_restart", []string{"1"}))
	}
	if b.CurrentEventID() != a.CurrentEventID() || !reflect.DeepEqual(b.Snapshot(), a.Snapshot()) {
		t.Fatalf("after the same mutations: current %d vs %d, snapshots equal %v", b.CurrentEventID(), a.CurrentEventID(), reflect.DeepEqual(b.Snapshot(), a.Snapshot()))
	}
	// The workload of another seed runs on the loaded server.
	must(t, (hmstest.Workload{Seed: 4, Databases: 1, Tables: 2, Events: 20}).Run(context.Background(), b))
}

func TestLoadStateRefusesABadStateAndKeepsItsOwn(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	must(t, s.CreateDatabase("kept"))
	for name, bad := range map[string]string{
		"not JSON":          `{`,
		"another version":   `{"version":9,"next_event_id":1,"next_txn_id":1}`,
		"ids not ascending": `{"version":1,"next_event_id":9,"next_txn_id":1,"events":[{"eventId":5,"eventType":"X","message":""},{"eventId":4,"eventType":"X","message":""}]}`,
		"id at next":        `{"version":1,"next_event_id":5,"next_txn_id":1,"events":[{"eventId":5,"eventType":"X","message":""}]}`,
		"database twice":    `{"version":1,"next_event_id":1,"next_txn_id":1,"databases":[{"name":"d"},{"name":"d"}]}`,
	} {
		if err := s.LoadState(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if got := s.Databases(); !reflect.DeepEqual(got, []string{"kept"}) || s.CurrentEventID() != 1 {
		t.Errorf("after refused loads: databases %v, current id %d; want [kept] and 1", got, s.CurrentEventID())
	}
}

// A server restarted from a state directory keeps the db uuid it had, so that
// a sidecar sees the same metastore (no new epoch, no full refresh); one that
// offered none still offers none.
func TestStateDirKeepsTheMetastoreUUID(t *testing.T) {
	dir := t.TempDir()
	a := hmstest.NewServer()
	defer a.Close()
	must(t, a.CreateDatabase("d"))
	must(t, a.SaveStateDir(dir))

	b := hmstest.NewServer()
	defer b.Close()
	if ok, err := b.LoadStateDir(dir); err != nil || !ok {
		t.Fatalf("load: %v, %v", ok, err)
	}
	if a.MetastoreUUID() == "" || b.MetastoreUUID() != a.MetastoreUUID() {
		t.Fatalf("restarted server's db uuid %q, want the saved %q", b.MetastoreUUID(), a.MetastoreUUID())
	}

	a.SetMetastoreUUID("")
	must(t, a.SaveStateDir(dir))
	c := hmstest.NewServer()
	defer c.Close()
	if _, err := c.LoadStateDir(dir); err != nil {
		t.Fatal(err)
	}
	if got := c.MetastoreUUID(); got != "" {
		t.Fatalf("restarted server offers db uuid %q; the saved one offered none", got)
	}
}
