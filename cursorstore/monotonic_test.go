package cursorstore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// Two writers race on one cursor, each proposing values around what it last
// read, some lower. Every value etcd ever held (seen by an independent raw watch
// from the first revision) must be at least the one before.
func TestCommittedCursorNeverDecreases(t *testing.T) {
	srv := etcdtest.New(t)
	ctx := context.Background()
	s1, s2 := newStore(t, srv.NewClient(t)), newStore(t, srv.NewClient(t))
	tok := leaderToken(t, srv.Client, s1, "a")
	key := s1.MasterCursorKey("hive")

	const rounds = 150
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for w, s := range []*cursorstore.Store{s1, s2} {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			seen, err := s.MasterCursor(ctx, "hive")
			if err != nil {
				t.Error(err)
				return
			}
			for range rounds {
				base := max(seen.Value, 0)
				value := base + int64(rng.IntN(11)) - 5
				if value < 0 {
					value = 0
				}
				next, err := s.CommitMaster(ctx, "hive", cursorstore.Commit{Token: tok, Base: seen, Value: value})
				mu.Lock()
				switch {
				case err == nil:
					outcomes["ok"]++
					seen = next
				case errors.Is(err, cursorstore.ErrBackwards):
					outcomes["backwards"]++
					if !seen.Exists || value >= seen.Value {
						t.Errorf("ErrBackwards for %d after %+v", value, seen)
					}
				case errors.Is(err, cursorstore.ErrConflict):
					outcomes["conflict"]++
					seen = next // the conflict returns the current cursor
				default:
					t.Errorf("commit %d: %v", value, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("outcomes: %v", outcomes)
	for _, k := range []string{"ok", "backwards", "conflict"} {
		if outcomes[k] == 0 {
			t.Errorf("no %q outcome in %d commits: the race did not exercise it", k, 2*rounds)
		}
	}

	// The whole history of the key, from etcd itself.
	resp, err := srv.Client.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("final get: %v %v", resp, err)
	}
	last := resp.Header.Revision
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	prev, n := int64(-1), 0
	for wr := range srv.Client.Watch(wctx, key, clientv3.WithRev(1)) {
		if wr.Err() != nil {
			t.Fatal(wr.Err())
		}
		for _, ev := range wr.Events {
			v, err := strconv.ParseInt(string(ev.Kv.Value), 10, 64)
			if err != nil {
				t.Fatalf("history holds %q", ev.Kv.Value)
			}
			if v < prev {
				t.Fatalf("cursor went from %d down to %d at revision %d", prev, v, ev.Kv.ModRevision)
			}
			prev, n = v, n+1
		}
		if wr.Header.Revision >= last {
			break
		}
	}
	if n != outcomes["ok"] {
		t.Fatalf("etcd history has %d writes, the writers saw %d successes", n, outcomes["ok"])
	}
}
