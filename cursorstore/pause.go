package cursorstore

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

// The pause key is the maintenance switch: while it exists the master does not
// advance. Its value is a free-form note for other operators (shown by status).

// Paused reports whether the pause key exists.
func (s *Store) Paused(ctx context.Context) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	kv, _, err := s.get(ctx, s.keys.pause())
	if err != nil {
		return false, err
	}
	return kv != nil, nil
}

// SetPaused creates (on, with reason as value) or deletes (off) the pause key;
// the same as `etcdctl put <root>/pause "reason"` and `etcdctl del <root>/pause`.
func (s *Store) SetPaused(ctx context.Context, on bool, reason string) error {
	if err := s.check(); err != nil {
		return err
	}
	key := s.keys.pause()
	rctx, cancel := s.request(ctx)
	defer cancel()
	err := etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		if on {
			_, err = s.cli.Put(rctx, key, reason)
		} else {
			_, err = s.cli.Delete(rctx, key)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("set %s (paused=%v): %w", key, on, err)
	}
	return nil
}

// WatchPause follows the pause key like WatchMaster follows a cursor: the current
// state first, then each change, the newest state for a slow reader; closed when
// ctx ends.
func (s *Store) WatchPause(ctx context.Context) Watch[bool] {
	key := s.keys.pause()
	fresh := newFreshness(key, s.freshBound)
	out := make(chan bool)
	if err := s.check(); err != nil {
		s.log.Error("cannot watch the pause key", zap.Error(err))
		fresh.failed(err)
		close(out)
		return Watch[bool]{C: out, fresh: fresh}
	}
	box := newLatest[bool]()
	first, last := true, false
	var wg sync.WaitGroup
	wg.Go(func() {
		s.watchKey(ctx, key, false, fresh, func(reset bool, changes []kvChange) {
			on := last
			if reset {
				on = len(changes) > 0
			}
			if len(changes) > 0 {
				on = changes[len(changes)-1].kv != nil
			}
			if !first && on == last {
				return
			}
			first, last = false, on
			box.set(on)
		})
	})
	go func() {
		box.forward(ctx, out)
		wg.Wait()
		close(out)
	}()
	return Watch[bool]{C: out, fresh: fresh}
}
