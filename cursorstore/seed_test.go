package cursorstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// A seed writes the committed cursor, epoch 0, the metastore's uuid and the
// seed key of a catalog no sidecar has run, in etcdctl-readable values; it is
// refused, naming why, once a committed cursor, a member's durable cursor of
// the catalog or any member's status exists, unless forced, and a forced seed
// starts a new epoch.
func TestSeedMasterWritesTheFirstLineageAndRefusesOnceSidecarsRan(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	dir := s.Root() + "/catalogs/hive/"

	old, sd, err := s.SeedMaster(ctx, "hive", cursorstore.SeedRequest{Value: 41, EventTime: 1700000000, From: "time 2023-11-14T22:13:20Z", Metastore: "uuid-1"})
	if err != nil {
		t.Fatal(err)
	}
	if old.Exists || sd.Value != 41 || sd.Epoch != 0 {
		t.Fatalf("seed of a new catalog: replaced %+v, wrote %+v; want nothing replaced, cursor 41 in epoch 0", old, sd)
	}
	for key, want := range map[string]string{"cursor": "41", "epoch": "0", "metastore": "uuid-1"} {
		if v, _, ok := raw(t, srv.Client, dir+key); !ok || v != want {
			t.Errorf("%s%s = %q (present %v); want %q", dir, key, v, ok, want)
		}
	}
	v, _, _ := raw(t, srv.Client, dir+"seed")
	var js map[string]any
	if err := json.Unmarshal([]byte(v), &js); err != nil || js["cursor"] != 41.0 || js["epoch"] != 0.0 || js["from"] != "time 2023-11-14T22:13:20Z" {
		t.Fatalf("seed key = %s (%v); want JSON with cursor, epoch and from", v, err)
	}
	c, err := s.MasterCursor(ctx, "hive")
	if err != nil || !c.Seed.Exists || c.Seed.Value != 41 || c.Seed.Epoch != 0 || c.Seed.EventTime != 1700000000 || c.Seed.Bad != "" {
		t.Fatalf("master cursor read back: %+v, %v; want the seed with it", c, err)
	}

	// Seeded already: refused, naming the cursor key.
	_, _, err = s.SeedMaster(ctx, "hive", cursorstore.SeedRequest{Value: 50})
	if !errors.Is(err, cursorstore.ErrSidecarsRan) || !strings.Contains(err.Error(), dir+"cursor") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second seed: %v; want ErrSidecarsRan naming %scursor and --force", err, dir)
	}
	// A member's durable cursor of the catalog, or a running member: refused.
	if err := s.PutMemberCursor(ctx, "fe-0", "other", 5, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err = s.SeedMaster(ctx, "other", cursorstore.SeedRequest{Value: 3}); !errors.Is(err, cursorstore.ErrSidecarsRan) ||
		!strings.Contains(err.Error(), "member fe-0 has a durable cursor") {
		t.Fatalf("seed of a catalog a member ran: %v; want ErrSidecarsRan naming the member", err)
	}
	if _, err := srv.Client.Put(ctx, s.StatusKey("fe-1"), `{"member":"fe-1"}`); err != nil {
		t.Fatal(err)
	}
	if _, _, err = s.SeedMaster(ctx, "third", cursorstore.SeedRequest{Value: 3}); !errors.Is(err, cursorstore.ErrSidecarsRan) ||
		!strings.Contains(err.Error(), "member fe-1 is running") {
		t.Fatalf("seed while a member runs: %v; want ErrSidecarsRan naming it", err)
	}
	if _, err := srv.Client.Delete(ctx, s.StatusKey("fe-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.Put(ctx, s.Root()+"/members/fe-2/holder", `{"addr":"10.0.0.2:9108"}`); err != nil {
		t.Fatal(err)
	}
	if _, _, err = s.SeedMaster(ctx, "third", cursorstore.SeedRequest{Value: 3}); !errors.Is(err, cursorstore.ErrSidecarsRan) ||
		!strings.Contains(err.Error(), "members/fe-2/holder") {
		t.Fatalf("seed while a sidecar holds its member name, before its status: %v; want ErrSidecarsRan naming the holder", err)
	}
	if _, _, ok := raw(t, srv.Client, s.Root()+"/catalogs/third/cursor"); ok {
		t.Fatal("a refused seed wrote the cursor")
	}

	// Forced: a new epoch, the uuid replaced by what the seeder read (none),
	// the replaced cursor's open transactions gone.
	if _, err := srv.Client.Put(ctx, dir+"txns", `{"complete_from":3}`); err != nil {
		t.Fatal(err)
	}
	old, sd, err = s.SeedMaster(ctx, "hive", cursorstore.SeedRequest{Value: 50, Force: true})
	if err != nil || old.Value != 41 || sd.Epoch != 1 {
		t.Fatalf("forced seed: replaced %+v, wrote %+v, %v; want 41 replaced by a seed of epoch 1", old, sd, err)
	}
	if _, _, ok := raw(t, srv.Client, dir+"metastore"); ok {
		t.Error("a seed made without a metastore identity kept the old one")
	}
	if v, _, ok := raw(t, srv.Client, dir+"txns"); ok {
		t.Errorf("a forced seed kept the replaced cursor's open transactions %s", v)
	}

	// A seed key put by hand that is not a seed: read as unreadable, the
	// cursor still readable.
	if _, err := srv.Client.Put(ctx, dir+"seed", "not json"); err != nil {
		t.Fatal(err)
	}
	if c, err := s.MasterCursor(ctx, "hive"); err != nil || c.Value != 50 || !c.Seed.Exists || c.Seed.Bad == "" {
		t.Fatalf("cursor with a bad seed: %+v, %v; want cursor 50 and the seed marked bad", c, err)
	}
	if _, _, err := s.SeedMaster(ctx, "hive", cursorstore.SeedRequest{Value: -1, Force: true}); err == nil {
		t.Fatal("a seed of -1 was accepted")
	}
}
