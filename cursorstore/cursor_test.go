package cursorstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

func TestMasterCursorUnsetSetAndReset(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	key := "/hmssync/test/catalogs/hive/cursor"

	c, err := s.MasterCursor(ctx, "hive")
	if err != nil || c.Exists || c.Rev != 0 || c.String() != "unset" {
		t.Fatalf("fresh cursor: %+v %v; want unset", c, err)
	}
	old, err := s.SetMaster(ctx, "hive", 48213)
	if err != nil || old.Exists {
		t.Fatalf("SetMaster on unset: old %+v, %v", old, err)
	}
	// Readable with etcdctl: the plain decimal.
	if v, rev, ok := raw(t, srv.Client, key); !ok || v != "48213" {
		t.Fatalf("%s holds %q (exists %v); want 48213", key, v, ok)
	} else if c, err = s.MasterCursor(ctx, "hive"); err != nil || c.Value != 48213 || !c.Exists || c.Rev != rev {
		t.Fatalf("MasterCursor = %+v, %v; want 48213 at rev %d", c, err, rev)
	}
	old, err = s.SetMaster(ctx, "hive", cursorstore.Unknown)
	if err != nil || old.Value != 48213 || !old.Exists {
		t.Fatalf("reset: old %+v, %v; want 48213", old, err)
	}
	if v, _, _ := raw(t, srv.Client, key); v != "-1" {
		t.Fatalf("after reset %s holds %q; want -1", key, v)
	}
	if _, err := s.SetMaster(ctx, "hive", -2); err == nil {
		t.Fatal("SetMaster accepted -2")
	}
	if _, err := s.SetMaster(ctx, "a/b", 1); err == nil {
		t.Fatal("SetMaster accepted catalog a/b")
	}
}

func TestBadValuesAreReportedWithKeyAndValueAndNeverReset(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	key := "/hmssync/test/catalogs/hive/cursor"
	for _, bad := range []string{"abc", "", " 12", "12.5", "-2", "99999999999999999999"} {
		if _, err := srv.Client.Put(ctx, key, bad); err != nil {
			t.Fatal(err)
		}
		c, err := s.MasterCursor(ctx, "hive")
		var bve *cursorstore.BadValueError
		if !errors.As(err, &bve) || bve.Key != key || bve.Value != bad {
			t.Fatalf("value %q: err %v; want a BadValueError naming %s and the value", bad, err, key)
		}
		if !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Fatalf("message %q does not name key and value", err)
		}
		if !c.Exists || c.Raw != bad || c.Rev == 0 {
			t.Fatalf("cursor with bad value: %+v", c)
		}
		// Nothing rewrote it.
		if v, _, _ := raw(t, srv.Client, key); v != bad {
			t.Fatalf("bad value %q was replaced by %q", bad, v)
		}
	}
	// The operator's fix works and reports what it replaced.
	if _, err := srv.Client.Put(ctx, key, "abc"); err != nil {
		t.Fatal(err)
	}
	old, err := s.SetMaster(ctx, "hive", 7)
	if err != nil || old.Raw != "abc" {
		t.Fatalf("SetMaster over abc: old %+v, %v", old, err)
	}

	// Member cursors too, and one bad key hides no good one.
	if _, err := srv.Client.Put(ctx, "/hmssync/test/members/m1/cursors/hive", "x1"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMemberCursor(ctx, "m1", "iceberg", 5, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MemberCursor(ctx, "m1", "hive"); err == nil || !strings.Contains(err.Error(), `"x1"`) {
		t.Fatalf("MemberCursor of x1: %v", err)
	}
	got, bad, err := s.MemberCursors(ctx, "m1")
	if err != nil || len(bad) != 1 || len(got) != 1 || got["iceberg"].Value != 5 {
		t.Fatalf("MemberCursors = %v, %v, %v; want iceberg=5 and one bad", got, bad, err)
	}
}

func TestMemberCursorIsDurableAndPlain(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	if c, err := s.MemberCursor(ctx, "fe-1", "hive"); err != nil || c.Exists {
		t.Fatalf("fresh member cursor %+v %v", c, err)
	}
	if err := s.PutMemberCursor(ctx, "fe-1", "hive", 120, 0); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client.Get(ctx, "/hmssync/test/members/fe-1/cursors/hive")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get: %v %v", resp, err)
	}
	if kv := resp.Kvs[0]; string(kv.Value) != "120" || kv.Lease != 0 {
		t.Fatalf("member cursor stored as %q with lease %x; want 120 without lease", kv.Value, kv.Lease)
	}
	if c, err := s.MemberCursor(ctx, "fe-1", "hive"); err != nil || c.Value != 120 {
		t.Fatalf("MemberCursor = %+v, %v", c, err)
	}
	if err := s.PutMemberCursor(ctx, "fe-1", "hive", -5, 0); err == nil {
		t.Fatal("PutMemberCursor accepted -5")
	}
}
