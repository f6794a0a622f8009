package election

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
	"github.com/hmssync/hmssync/internal/retry"
)

// termState is the bookkeeping of one mastership.
type termState struct {
	term Term
	done chan struct{} // Term.Done

	stopOnce   sync.Once
	stop       chan struct{} // closed by Resign or StepDown
	stopReason string        // written once, before stop closes

	released   chan struct{} // closed once the lease was revoked or given up
	releaseErr error         // written once, before released closes
}

func newTermState(tok Token) *termState {
	done := make(chan struct{})
	return &termState{
		term:     Term{Token: tok, Done: done},
		done:     done,
		stop:     make(chan struct{}),
		released: make(chan struct{}),
	}
}

func (ts *termState) requestStop(reason string) {
	ts.stopOnce.Do(func() {
		ts.stopReason = reason
		close(ts.stop)
	})
}

func (e *Elector) beginTerm(tok Token) *termState {
	ts := newTermState(tok)
	e.mu.Lock()
	e.term = ts
	e.notifyLocked()
	e.mu.Unlock()
	e.log.Info("became master", zap.String("key", tok.Key), zap.Int64("rev", tok.Rev))
	return ts
}

// endTerm closes Term.Done before anything else happens, so that the caller's
// work for this term stops before the lease is given up and a successor can win.
func (e *Elector) endTerm(ts *termState, reason string) {
	e.mu.Lock()
	e.term = nil
	close(ts.done)
	e.notifyLocked()
	e.mu.Unlock()
	e.log.Info("no longer master", zap.String("reason", reason), zap.Int64("rev", ts.term.Token.Rev))
}

// hold keeps the mastership until something ends it and says what did.
func (e *Elector) hold(ctx context.Context, sess *session, ts *termState, from int64) string {
	hctx, cancel := context.WithCancel(ctx)
	lost := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		if reason := e.watchOwnKey(hctx, ts.term.Token, from); reason != "" {
			lost <- reason
		}
	})
	defer func() {
		cancel()
		wg.Wait()
	}()

	var gateTick <-chan time.Time
	if e.cfg.CanLead != nil {
		t := time.NewTicker(e.cfg.GateInterval)
		defer t.Stop()
		gateTick = t.C
	}
	var gateFalseSince time.Time
	for {
		select {
		case <-ctx.Done():
			return "shutting down"
		case <-sess.Done():
			return "session lease lost (expired, revoked, or etcd unreachable)"
		case reason := <-lost:
			return reason
		case <-ts.stop:
			return ts.stopReason
		case now := <-gateTick:
			if e.cfg.CanLead() {
				gateFalseSince = time.Time{}
				continue
			}
			if gateFalseSince.IsZero() {
				gateFalseSince = now
				e.log.Warn("candidacy gate is false while master; resigning if it stays false",
					zap.Duration("grace", e.cfg.GateGrace))
			}
			if now.Sub(gateFalseSince) >= e.cfg.GateGrace {
				return fmt.Sprintf("candidacy gate false for %s", e.cfg.GateGrace)
			}
		}
	}
}

// watchOwnKey follows the own candidate key from revision from and returns why
// the mastership is lost ("" when ctx ended). A watch that fails (no etcd leader,
// compaction, connection loss) is followed by a linearizable read, so nothing
// that happened meanwhile is missed.
func (e *Elector) watchOwnKey(ctx context.Context, tok Token, from int64) string {
	cli := e.cfg.Client
	delay := retry.NewDelay(100*time.Millisecond, e.cfg.RequestTimeout)
	for {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := cli.Watch(wctx, tok.Key, clientv3.WithRev(from))
		for wr := range wch {
			if wr.Err() != nil {
				e.log.Debug("watch on own leader key failed", zap.Error(wr.Err()))
				break
			}
			for _, ev := range wr.Events {
				switch {
				case ev.Type == mvccpb.DELETE:
					cancel()
					return "leader key " + tok.Key + " deleted"
				case ev.Kv.CreateRevision != tok.Rev:
					cancel()
					return "leader key " + tok.Key + " replaced"
				}
			}
			from = wr.Header.Revision + 1
		}
		cancel()
		if ctx.Err() != nil {
			return ""
		}
		rctx, rcancel := etcdcall.Request(ctx, e.cfg.RequestTimeout)
		get, err := cli.Get(rctx, tok.Key)
		rcancel()
		switch {
		case err != nil:
			e.log.Warn("cannot confirm own leader key; the lease decides", zap.String("key", tok.Key), zap.Error(err))
			if !delay.Wait(ctx) {
				return ""
			}
		case len(get.Kvs) == 0:
			return "leader key " + tok.Key + " deleted"
		case get.Kvs[0].CreateRevision != tok.Rev:
			return "leader key " + tok.Key + " replaced"
		default:
			from = get.Header.Revision + 1
			delay.Reset()
		}
	}
}
