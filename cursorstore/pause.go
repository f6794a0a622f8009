package cursorstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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
// the same as `etcdctl put <root>/pause "reason"` and `etcdctl del <root>/pause`,
// except that it records the time (pause_since, see StampPause) in the same
// transaction, and removes that record with the key.
func (s *Store) SetPaused(ctx context.Context, on bool, reason string) error {
	if err := s.check(); err != nil {
		return err
	}
	key, since := s.keys.pause(), s.keys.pauseSince()
	rctx, cancel := s.request(ctx)
	defer cancel()
	err := etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		if !on {
			_, err = s.cli.Txn(rctx).Then(clientv3.OpDelete(key), clientv3.OpDelete(since)).Commit()
			return err
		}
		if _, err := s.cli.Put(rctx, key, reason); err != nil {
			return err
		}
		// A put of an existing key keeps its create revision: the
		// record of that revision, if any, stays right.
		_, err = s.stampPause(rctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("set %s (paused=%v): %w", key, on, err)
	}
	return nil
}

// PauseStamp is the value of pause_since: when the pause key of create
// revision Rev was set, as far as hmssync knows (SetPaused's time, else the
// time a master first held for it).
type PauseStamp struct {
	Rev   int64     `json:"pause_create_revision"`
	Since time.Time `json:"since"`
}

// StampPause records when the pause key was set, if it exists and no record of
// it is there yet (an operator's `etcdctl put` writes only the reason): the
// master calls it as it begins to hold, so that `hmssync status` can say since
// when the cluster is paused. It returns the recorded time (zero when the key
// does not exist). The record names the key's create revision, so that one left
// from an earlier pause is never taken for the current one; the write is a
// compare-and-set on both keys, so concurrent callers agree on one time.
func (s *Store) StampPause(ctx context.Context) (time.Time, error) {
	if err := s.check(); err != nil {
		return time.Time{}, err
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	var since time.Time
	err := etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		since, err = s.stampPause(rctx)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("record when %s was set, in %s: %w", s.keys.pause(), s.keys.pauseSince(), err)
	}
	return since, nil
}

// stampPause is StampPause within one request's context.
func (s *Store) stampPause(ctx context.Context) (time.Time, error) {
	key, sinceKey := s.keys.pause(), s.keys.pauseSince()
	for range 3 {
		resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(key), clientv3.OpGet(sinceKey)).Commit()
		if err != nil {
			return time.Time{}, err
		}
		pk, sk := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
		if len(pk) == 0 {
			return time.Time{}, nil
		}
		var sinceRev int64
		if len(sk) > 0 {
			sinceRev = sk[0].ModRevision
			if st, ok := parsePauseStamp(sk[0].Value); ok && st.Rev == pk[0].CreateRevision {
				return st.Since, nil
			}
		}
		st := PauseStamp{Rev: pk[0].CreateRevision, Since: time.Now().UTC()}
		val, err := json.Marshal(st)
		if err != nil {
			return time.Time{}, err
		}
		tr, err := s.cli.Txn(ctx).If(
			clientv3.Compare(clientv3.CreateRevision(key), "=", st.Rev),
			clientv3.Compare(clientv3.ModRevision(sinceKey), "=", sinceRev),
		).Then(clientv3.OpPut(sinceKey, string(val))).Commit()
		if err != nil {
			return time.Time{}, err
		}
		if tr.Succeeded {
			return st.Since, nil
		}
		// Another writer came first, or the key was set again: read again.
	}
	return time.Time{}, fmt.Errorf("%s or %s kept changing while it was recorded", key, sinceKey)
}

// parsePauseStamp reads a pause_since value; ok is false for anything else.
func parsePauseStamp(v []byte) (PauseStamp, bool) {
	var st PauseStamp
	if err := json.Unmarshal(v, &st); err != nil || st.Rev <= 0 || st.Since.IsZero() {
		return PauseStamp{}, false
	}
	return st, true
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
