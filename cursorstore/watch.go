package cursorstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"

	"github.com/hmssync/hmssync/internal/retry"
)

// kvChange is one key's new state in a watched range: kv nil when deleted.
type kvChange struct {
	key string
	kv  *mvccpb.KeyValue
}

// watchKey calls apply with key's current state (reset true: the changes are
// every key present, nil when none; with prefix, every key under key) and then
// with the changes of each watch response (reset false; the events of one
// revision, as one transaction wrote them, arrive together), until ctx ends.
// The pattern is Get, then Watch from the read's revision, with
// WithRequireLeader (a member cut off from its cluster cancels the watch
// instead of hanging). Whenever the watch ends for any reason but ctx
// (compaction, no leader, a closed stream, silence past the freshness bound)
// the range is read again, so no change is lost and apply sees the same state
// twice at most (the watch repeats the changes made at the read's revision).
// fresh records each answer from etcd and each failure.
func (s *Store) watchKey(ctx context.Context, key string, prefix bool, fresh *freshness, apply func(reset bool, changes []kvChange)) {
	delay := retry.NewDelay(50*time.Millisecond, 2*s.timeout)
	var opts []clientv3.OpOption
	if prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	for ctx.Err() == nil {
		rctx, cancel := s.request(ctx)
		resp, err := s.cli.Get(rctx, key, opts...)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				fresh.failed(err)
				s.log.Warn("watch: cannot read the key; retrying", zap.String("key", key), zap.Error(err))
				delay.Wait(ctx)
			}
			continue
		}
		fresh.heardNow()
		changes := make([]kvChange, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			changes = append(changes, kvChange{key: string(kv.Key), kv: kv})
		}
		apply(true, changes)
		rev := resp.Header.Revision
		if s.beforeWatch != nil {
			s.beforeWatch(key, rev)
		}
		err = s.follow(ctx, key, opts, rev, fresh, delay, apply)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, rpctypes.ErrCompacted) {
			// etcd answered; the history is gone: read again at once.
			s.log.Info("watch: history compacted; re-reading", zap.String("key", key), zap.Error(err))
		} else {
			fresh.failed(err)
			s.log.Warn("watch ended; re-reading", zap.String("key", key), zap.Error(err))
		}
		s.watchRestarts.Add(1)
		delay.Wait(ctx)
	}
}

// follow watches key (with opts) from revision from, calling apply with each
// response's changes, until the watch fails (the error says why) or ctx ends
// (nil). A watch on a gRPC
// stream that etcd no longer answers (a partitioned client: the stream neither
// delivers nor fails) is found by asking etcd for a progress notification every
// request timeout: when nothing at all came back for the freshness bound, the
// watch is given up and re-established, which reads the key with a deadline.
//
// etcd answers a progress request only when every watch on the gRPC stream has
// reached its start revision, and drops it otherwise. So the watch starts at the
// read's revision (never in the future), and runs on a stream of its own: the
// client shares one stream among all watches whose contexts carry the same
// metadata, and other watches of the same client (the election's) start in the
// future and would silence every progress request while etcd is quiet.
func (s *Store) follow(ctx context.Context, key string, opts []clientv3.OpOption, from int64, fresh *freshness, delay *retry.Delay, apply func(bool, []kvChange)) error {
	own := metadata.AppendToOutgoingContext(ctx, "hmssync-watch", strconv.QuoteToASCII(key))
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(own))
	defer cancel()
	// Watch returns only once etcd created the watch and has no deadline of its
	// own: the timer cancels a creation etcd does not answer.
	creating := time.AfterFunc(s.freshBound, cancel)
	wopts := append([]clientv3.OpOption{clientv3.WithRev(from), clientv3.WithCreatedNotify(), clientv3.WithProgressNotify()}, opts...)
	wch := s.cli.Watch(wctx, key, wopts...)
	if !creating.Stop() {
		return fmt.Errorf("etcd did not create the watch within %s", s.freshBound.Round(time.Millisecond))
	}
	ask := time.NewTicker(s.timeout)
	defer ask.Stop()
	for {
		select {
		case wr, ok := <-wch:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("the etcd client closed the watch")
			}
			if err := wr.Err(); err != nil {
				if errors.Is(err, rpctypes.ErrCompacted) {
					return fmt.Errorf("compacted at revision %d: %w", wr.CompactRevision, err)
				}
				return err
			}
			fresh.heardNow()
			if !wr.Created {
				// Only a watch that delivers counts as recovered: one that
				// etcd creates and cancels at once must not retry in a spin.
				delay.Reset()
			}
			if len(wr.Events) == 0 {
				continue
			}
			changes := make([]kvChange, 0, len(wr.Events))
			for _, ev := range wr.Events {
				c := kvChange{key: string(ev.Kv.Key)}
				if ev.Type != mvccpb.DELETE {
					c.kv = ev.Kv
				}
				changes = append(changes, c)
			}
			apply(false, changes)
		case now := <-ask.C:
			if d := fresh.silentFor(now); d > s.freshBound {
				return fmt.Errorf("no answer from etcd for %s (bound %s)", d.Round(time.Millisecond), s.freshBound.Round(time.Millisecond))
			}
			s.requestProgress(wctx, key)
		}
	}
}

// requestProgress asks etcd for a progress notification on the watch stream of
// wctx (the stream is chosen by the context's metadata, so wctx's own). The
// answer arrives on every watch of that stream as a response without events.
func (s *Store) requestProgress(wctx context.Context, key string) {
	rctx, cancel := s.request(wctx)
	defer cancel()
	if err := s.cli.RequestProgress(rctx); err != nil && wctx.Err() == nil {
		s.log.Debug("watch: progress request failed", zap.String("key", key), zap.Error(err))
	}
}

// WatchRestarts counts how often a watch of this store had to be re-established
// (compaction, lost leader, broken or silent stream): a metric for operators.
func (s *Store) WatchRestarts() int64 { return s.watchRestarts.Load() }

// WatchMaster follows catalog's master cursor with its epoch and metastore
// identity (one watch over the catalog's keys, so a cursor and the epoch written
// in the same transaction arrive as one value): the current value first (also
// when absent: Exists false), then every change, until ctx ends, when the
// channel is closed. A slow reader is not queued up: it receives the newest value
// (intermediate ones may be skipped). Survives reconnects, member loss and
// compaction; Fresh says whether it currently hears from etcd. A bad value (not
// a decimal) is logged with its key and skipped: the channel keeps the last good
// value until someone fixes the key.
func (s *Store) WatchMaster(ctx context.Context, catalog string) Watch[Cursor] {
	fresh := newFreshness(s.keys.masterCursor(catalog), s.freshBound)
	out := make(chan Cursor)
	if err := s.check(catalogName(catalog)); err != nil {
		s.log.Error("cannot watch master cursor", zap.Error(err))
		fresh.failed(err)
		close(out)
		return Watch[Cursor]{C: out, fresh: fresh}
	}
	box := newLatest[Cursor]()
	first, last := true, Cursor{}
	state := map[string]*mvccpb.KeyValue{}
	var wg sync.WaitGroup
	wg.Go(func() {
		s.watchKey(ctx, s.keys.masterDir(catalog), true, fresh, func(reset bool, changes []kvChange) {
			if reset {
				clear(state)
			}
			for _, ch := range changes {
				if ch.kv == nil {
					delete(state, ch.key)
				} else {
					state[ch.key] = ch.kv
				}
			}
			kvs := make([]*mvccpb.KeyValue, 0, len(state))
			for _, kv := range state {
				kvs = append(kvs, kv)
			}
			c, err := s.parseMaster(catalog, kvs)
			if err != nil {
				s.log.Error("master cursor is unreadable; followers wait until it is fixed", zap.Error(err))
				return
			}
			if !first && c == last {
				return // the same state, read again after a watch restart
			}
			first, last = false, c
			box.set(c)
		})
	})
	go func() {
		box.forward(ctx, out)
		wg.Wait()
		close(out)
	}()
	return Watch[Cursor]{C: out, fresh: fresh}
}
