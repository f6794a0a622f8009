package preflight_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/preflight"
)

// check says per catalog whether its cursor is seeded (and where the first
// master starts otherwise), next to whether Doris's own sync is still on.
func TestCheckReportsWhetherTheCursorIsSeeded(t *testing.T) {
	w := newWorld(t, fetest.Options{Catalogs: []fetest.Catalog{
		{Name: "hive", Properties: map[string]string{"type": "hms", "hive.enable_hms_events_incremental_sync": "true"}},
		{Name: "other", Properties: map[string]string{"type": "hms"}},
	}})
	tg := w.target()
	tg.Catalogs = append(tg.Catalogs, preflight.Catalog{Name: "other", URIs: tg.Catalogs[0].URIs, HMSCatalog: "hive", Timeout: tg.Catalogs[0].Timeout, Window: 100})

	rs := preflight.Run(context.Background(), tg)
	if r := find(t, rs, "etcd read under"); !strings.Contains(r.Check, "(unauthenticated: no etcd.username)") {
		t.Errorf("etcd read without a user: %q; want it said unauthenticated", r.Check)
	}
	if r := find(t, rs, "catalog hive: where the sidecars start"); !r.OK || !strings.Contains(r.Detail, "not seeded") || !strings.Contains(r.Detail, "full-refreshes") {
		t.Fatalf("unseeded catalog: %+v; want it reported not seeded, with the full refresh that follows", r)
	}
	if r := find(t, rs, "catalog hive: the FE's own event sync is off"); r.OK {
		t.Fatalf("Doris's own sync on: %+v; want it failed", r)
	}

	store := cursorstore.New(w.etcd.Client, "/hmssync", "prod", 0, nil)
	if _, _, err := store.SeedMaster(context.Background(), "hive", cursorstore.SeedRequest{Value: 2, EventTime: 1700000000, From: "time 2023-11-14T22:13:20Z"}); err != nil {
		t.Fatal(err)
	}
	rs = preflight.Run(context.Background(), tg)
	r := find(t, rs, "catalog hive: where the sidecars start")
	if !r.OK || !strings.Contains(r.Detail, "seeded at cursor 2 (epoch 0, time 2023-11-14T22:13:20Z, first event at 2023-11-14T22:13:20Z)") {
		t.Fatalf("seeded catalog: %+v; want the seed's cursor, epoch and time", r)
	}
	if r := find(t, rs, "catalog other: where the sidecars start"); !strings.Contains(r.Detail, "not seeded") {
		t.Fatalf("the other catalog: %+v; want it not seeded", r)
	}
}
