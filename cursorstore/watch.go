package cursorstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/retry"
)

// watchKey calls update with key's current state (nil when absent) and then with
// every change, until ctx ends. The pattern is Get, then Watch from the read's
// revision + 1, with WithRequireLeader (a member cut off from its cluster cancels
// the watch instead of hanging) and WithProgressNotify. Whenever the watch ends
// for any reason but ctx (compaction, no leader, a closed stream) the key is read
// again, so no change is lost and update sees the same state twice at most.
func (s *Store) watchKey(ctx context.Context, key string, update func(kv *mvccpb.KeyValue)) {
	delay := retry.NewDelay(50*time.Millisecond, 2*s.timeout)
	for ctx.Err() == nil {
		kv, rev, err := s.get(ctx, key)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("watch: cannot read the key; retrying", zap.String("key", key), zap.Error(err))
				delay.Wait(ctx)
			}
			continue
		}
		update(kv)
		if s.beforeWatch != nil {
			s.beforeWatch(key, rev)
		}

		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := s.cli.Watch(wctx, key, clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
		for wr := range wch {
			if err := wr.Err(); err != nil {
				if errors.Is(err, rpctypes.ErrCompacted) {
					s.log.Info("watch: history compacted; re-reading", zap.String("key", key), zap.Int64("compact_revision", wr.CompactRevision))
				} else {
					s.log.Warn("watch ended; re-reading", zap.String("key", key), zap.Error(err))
				}
				break
			}
			delay.Reset()
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					update(nil)
				} else {
					update(ev.Kv)
				}
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.watchRestarts.Add(1)
		delay.Wait(ctx)
	}
}

// WatchRestarts counts how often a watch of this store had to be re-established
// (compaction, lost leader, broken stream): a metric for operators.
func (s *Store) WatchRestarts() int64 { return s.watchRestarts.Load() }

// WatchMaster follows catalog's master cursor: the current value first (also
// when absent: Exists false), then every change, until ctx ends, when the
// channel is closed. A slow reader is not queued up: it receives the newest value
// (intermediate ones may be skipped). Survives reconnects, member loss and
// compaction. A bad value (not a decimal) is logged with its key and skipped:
// the channel keeps the last good value until someone fixes the key.
func (s *Store) WatchMaster(ctx context.Context, catalog string) <-chan Cursor {
	out := make(chan Cursor)
	if err := s.check(catalogName(catalog)); err != nil {
		s.log.Error("cannot watch master cursor", zap.Error(err))
		close(out)
		return out
	}
	key := s.keys.masterCursor(catalog)
	fix := s.masterFix(catalog)
	box := newLatest[Cursor]()
	first, lastRev := true, int64(0)
	var wg sync.WaitGroup
	wg.Go(func() {
		s.watchKey(ctx, key, func(kv *mvccpb.KeyValue) {
			c, err := parseCursor(key, kv, fix)
			if err != nil {
				s.log.Error("master cursor is unreadable; followers wait until it is fixed", zap.Error(err))
				return
			}
			if !first && c.Rev == lastRev {
				return // the same state, read again after a watch restart
			}
			first, lastRev = false, c.Rev
			box.set(c)
		})
	})
	go func() {
		box.forward(ctx, out)
		wg.Wait()
		close(out)
	}()
	return out
}
