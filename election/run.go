package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/retry"
)

// Run campaigns until ctx ends: it waits for the gate, campaigns with a fresh
// session, holds the mastership while it lasts and campaigns again, retrying etcd
// failures with backoff. When ctx ends it resigns if master (bounded by the
// request timeout, also when etcd is unreachable) and returns nil. Run may be
// called once.
func (e *Elector) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("election: Run called twice")
	}
	var wg sync.WaitGroup
	wg.Go(func() { e.followLeader(ctx) })
	defer wg.Wait()

	delay := retry.NewDelay(100*time.Millisecond, e.cfg.LeaseTTL)
	for first := true; ; first = false {
		if !e.waitGate(ctx, first) {
			return nil
		}
		err := e.candidacy(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			delay.Reset()
			continue
		}
		e.log.Warn("campaign failed; retrying", zap.Error(err))
		if !delay.Wait(ctx) {
			return nil
		}
	}
}

// candidacy is one session's life: campaign, maybe a term, then the lease is
// revoked. A nil error means "campaign again now".
func (e *Elector) candidacy(ctx context.Context) error {
	sess, err := e.openSession(ctx)
	if err != nil {
		return err
	}

	cctx, withdraw := context.WithCancel(ctx)
	gateClosed := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		e.watchGate(cctx, func() {
			close(gateClosed)
			withdraw()
		})
	})
	tok, from, err := e.campaign(cctx, sess)
	withdraw()
	wg.Wait()

	if err != nil {
		relErr := e.closeSession(sess)
		select {
		case <-gateClosed:
			return relErr
		default:
		}
		if ctx.Err() != nil {
			return nil
		}
		return errors.Join(fmt.Errorf("campaign of %q: %w", e.cfg.Name, err), relErr)
	}

	ts := e.beginTerm(tok)
	reason := e.hold(ctx, sess, ts, from)
	e.endTerm(ts, reason)
	ts.releaseErr = e.closeSession(sess)
	close(ts.released)
	if ts.releaseErr != nil {
		e.log.Warn("giving up the mastership", zap.Error(ts.releaseErr))
	}
	return nil
}
