package cursorstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// The pause's time: SetPaused records it with the key; a key put by hand (an
// operator's etcdctl) has none until StampPause records one, which every later
// call and Statuses return unchanged; a record left from an earlier pause is
// never taken for a new one.
func TestPauseSinceIsRecordedOncePerPause(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()

	if since, err := s.StampPause(ctx); err != nil || !since.IsZero() {
		t.Fatalf("StampPause without a pause key: %s, %v; want zero and no error", since, err)
	}
	before := time.Now()
	if err := s.SetPaused(ctx, true, "upgrade"); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Statuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := cs.PausedSince
	if !cs.Paused || first.Before(before.Add(-time.Second)) || first.After(time.Now()) {
		t.Fatalf("after SetPaused: paused %v since %s; want since the call (%s)", cs.Paused, first, before)
	}
	if since, err := s.StampPause(ctx); err != nil || !since.Equal(first) {
		t.Errorf("StampPause of a recorded pause: %s, %v; want the recorded %s", since, err, first)
	}
	// A second put of the reason keeps the key, and so its time.
	if _, err := srv.Client.Put(ctx, s.PauseKey(), "upgrade, part 2"); err != nil {
		t.Fatal(err)
	}
	if cs, _ := s.Statuses(ctx); !cs.PausedSince.Equal(first) || cs.PauseReason != "upgrade, part 2" {
		t.Errorf("after a new reason: since %s (%q); want %s kept", cs.PausedSince, cs.PauseReason, first)
	}

	// Deleted and put again by hand: the old record does not count.
	if _, err := srv.Client.Delete(ctx, s.PauseKey()); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.Put(ctx, s.PauseKey(), "by hand"); err != nil {
		t.Fatal(err)
	}
	if cs, _ := s.Statuses(ctx); !cs.Paused || !cs.PausedSince.IsZero() {
		t.Errorf("a pause put by hand, not yet stamped: since %s; want unknown (zero), not the earlier pause's %s", cs.PausedSince, first)
	}
	stamped, err := s.StampPause(ctx)
	if err != nil || !stamped.After(first) {
		t.Fatalf("StampPause of a new pause: %s, %v; want a new time, after the earlier pause's %s", stamped, err, first)
	}
	if again, err := s.StampPause(ctx); err != nil || !again.Equal(stamped) {
		t.Errorf("StampPause again: %s, %v; want %s", again, err, stamped)
	}
	if cs, _ := s.Statuses(ctx); !cs.PausedSince.Equal(stamped) {
		t.Errorf("Statuses after StampPause: since %s; want %s", cs.PausedSince, stamped)
	}

	if err := s.SetPaused(ctx, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := raw(t, srv.Client, "/hmssync/"+cluster+"/pause_since"); ok {
		t.Errorf("SetPaused(false) left pause_since")
	}
	if cs, _ := s.Statuses(ctx); cs.Paused || !cs.PausedSince.IsZero() {
		t.Errorf("after SetPaused(false): paused %v since %s", cs.Paused, cs.PausedSince)
	}
}
