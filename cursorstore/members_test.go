package cursorstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// WatchMembers delivers each member's durable cursor and epoch of one catalog
// with its liveness (status key), and follows their changes.
func TestWatchMembersFollowsCursorsEpochsAndLiveness(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	put := func(key, v string) {
		t.Helper()
		if _, err := srv.Client.Put(ctx, key, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutMemberCursor(ctx, "m1", "hive", 40, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMemberCursor(ctx, "m1", "other", 99, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMemberCursor(ctx, "m2", "hive", 7, 2); err != nil {
		t.Fatal(err)
	}
	put(s.StatusKey("m1"), `{"member":"m1"}`)
	put(s.StatusKey("m3"), `{"member":"m3"}`) // live, no cursor for hive yet

	w := s.WatchMembers(ctx, "hive")
	got := next(t, w.C, 5*time.Second)
	want := map[string]cursorstore.MemberProgress{
		"m1": {Live: true, HasCursor: true, Value: 40, Epoch: 2},
		"m2": {HasCursor: true, Value: 7, Epoch: 2},
		"m3": {Live: true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first value %v, want %v (catalog other's cursor must not show)", got, want)
	}
	if err := w.Fresh(); err != nil {
		t.Errorf("Fresh after the first value: %v", err)
	}

	// A status rewrite (every member's, every few seconds) changes nothing
	// the watch delivers.
	put(s.StatusKey("m3"), `{"member":"m3","time":"later"}`)
	quiet(t, w.C, "a status key rewritten")

	if err := s.PutMemberCursor(ctx, "m1", "hive", 45, 2); err != nil {
		t.Fatal(err)
	}
	if got := next(t, w.C, 5*time.Second); got["m1"].Value != 45 || !got["m1"].Live {
		t.Fatalf("after m1 moved to 45: %v", got)
	}
	if _, err := srv.Client.Delete(ctx, s.StatusKey("m1")); err != nil {
		t.Fatal(err)
	}
	if got := next(t, w.C, 5*time.Second); got["m1"].Live || got["m1"].Value != 45 {
		t.Fatalf("after m1's status key went: %v, want m1 not live at 45", got)
	}
	put(s.MemberCursorKey("m2", "hive"), "not-a-number")
	if got := next(t, w.C, 5*time.Second); got["m2"].HasCursor {
		t.Fatalf("m2's cursor unreadable: %v, want m2 without a cursor (never ahead of what it applied)", got)
	}
	cancel()
	for range w.C {
	}
}
