package cursorstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// next receives from ch or fails after d.
func next[T any](t *testing.T, ch <-chan T, d time.Duration) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatal("channel closed")
		}
		return v
	case <-time.After(d):
		t.Fatalf("nothing received within %s", d)
	}
	panic("unreachable")
}

// quiet checks that nothing arrives on ch for a short while.
func quiet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s: got %+v", what, v)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestWatchMasterStartsWithTheCurrentValueAndFollows(t *testing.T) {
	srv := etcdtest.New(t)
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core()))
	s := cursorstore.New(srv.Client, "/hmssync", cluster, 2*time.Second, log)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := s.MasterCursorKey("hive")

	ch := s.WatchMaster(ctx, "hive").C
	if c := next(t, ch, 10*time.Second); c.Exists {
		t.Fatalf("first value %+v; want absent", c)
	}
	put := func(v string) int64 {
		resp, err := srv.Client.Put(context.Background(), key, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	rev := put("5")
	if c := next(t, ch, 10*time.Second); c.Value != 5 || c.Rev != rev {
		t.Fatalf("got %+v; want 5@%d", c, rev)
	}
	// A bad value is skipped and logged so that an operator can find and fix
	// it: the log names the key and the value. The good value after it arrives.
	const bad = "abc"
	put(bad)
	eventually(t, 10*time.Second, "a warning naming "+key+" and its value "+bad, func() bool {
		return loggedWith(logs, zapcore.WarnLevel, key, bad)
	})
	quiet(t, ch, "after a bad value")
	rev = put("9")
	if c := next(t, ch, 10*time.Second); c.Value != 9 || c.Rev != rev {
		t.Fatalf("got %+v; want 9@%d", c, rev)
	}
	if _, err := srv.Client.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch, 10*time.Second); c.Exists {
		t.Fatalf("after delete %+v; want absent", c)
	}

	// A second watcher that starts now gets the current state first.
	rev = put("12")
	if c := next(t, s.WatchMaster(ctx, "hive").C, 10*time.Second); c.Value != 12 || c.Rev != rev {
		t.Fatalf("new watcher's first value %+v; want 12@%d", c, rev)
	}

	cancel()
	eventually(t, 10*time.Second, "channel closed after cancel", func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	})
}

// loggedWith reports whether an entry at level or above mentions every one of
// words, in its message or in any field.
func loggedWith(logs *observer.ObservedLogs, level zapcore.Level, words ...string) bool {
	for _, e := range logs.All() {
		if e.Level < level {
			continue
		}
		text := e.Message
		for _, v := range e.ContextMap() {
			text += " " + fmt.Sprint(v)
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(text, w)
		}
		if all {
			return true
		}
	}
	return false
}

func TestWatchMasterGivesASlowReaderTheNewestValue(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := s.WatchMaster(ctx, "hive").C
	next(t, ch, 10*time.Second)
	var lastRev int64
	for v := range 50 {
		resp, err := srv.Client.Put(context.Background(), s.MasterCursorKey("hive"), strconv.Itoa(v))
		if err != nil {
			t.Fatal(err)
		}
		lastRev = resp.Header.Revision
	}
	// Reading only now, the reader catches up to 49, in order, values skipped or not.
	var got []int64
	for {
		c := next(t, ch, 10*time.Second)
		got = append(got, c.Value)
		if c.Rev == lastRev {
			break
		}
	}
	if got[len(got)-1] != 49 {
		t.Fatalf("last value %d; want 49", got[len(got)-1])
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("values out of order: %v", got)
		}
	}
}

func TestPauseKey(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if on, err := s.Paused(ctx); err != nil || on {
		t.Fatalf("Paused = %v, %v; want false", on, err)
	}
	ch := s.WatchPause(ctx).C
	if on := next(t, ch, 10*time.Second); on {
		t.Fatal("first pause state true; want false")
	}
	// An operator pauses with etcdctl put.
	if _, err := srv.Client.Put(ctx, "/hmssync/test/pause", "upgrading HMS"); err != nil {
		t.Fatal(err)
	}
	if on := next(t, ch, 10*time.Second); !on {
		t.Fatal("pause not seen")
	}
	if on, err := s.Paused(ctx); err != nil || !on {
		t.Fatalf("Paused = %v, %v; want true", on, err)
	}
	// Re-writing the reason changes nothing for the watcher.
	if err := s.SetPaused(ctx, true, "still upgrading"); err != nil {
		t.Fatal(err)
	}
	quiet(t, ch, "pause re-written")
	if err := s.SetPaused(ctx, false, ""); err != nil {
		t.Fatal(err)
	}
	if on := next(t, ch, 10*time.Second); on {
		t.Fatal("unpause not seen")
	}
}
