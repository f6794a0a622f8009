package agent

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// pauseKeyPresent decides whether the master holds for the pause key before a
// cycle. The watch's cached value is trusted only while the watch is fresh and
// has delivered a value: a watch that has not started, has not delivered the
// key yet or has lost etcd may say "not paused" while the key exists, and a
// cycle run then would advance during maintenance. Otherwise etcd is read; if
// it cannot be read the cycle does not run (a transient failure).
func (l *catalogLoop) pauseKeyPresent(ctx context.Context) (bool, error) {
	why := l.pause.notFresh()
	if why == nil {
		return l.pause.isPaused(), nil
	}
	p, err := l.store.Paused(ctx)
	if err != nil {
		return false, fmt.Errorf("read the pause key from etcd (its watch is not to be trusted: %v): %w", why, err)
	}
	return p, nil
}

// holdPaused is the wait of a master holding the catalog for the pause key,
// until the role or the pause key changes. It records when the pause began
// (PauseStamper) and reads the metastore's current event id every poll
// interval, so that `hmssync status`, /status and the lag metrics keep showing
// how far the catalog falls behind while it is paused; a failed read is only
// recorded (metastore_error): the pause holds whatever the metastore does.
// While the pause watch is not fresh it may never signal the key's removal, so
// the wait then ends after one poll interval and the next cycle reads the key
// from etcd (pauseKeyPresent).
func (l *catalogLoop) holdPaused(ctx context.Context, roleChanged, pauseChanged <-chan struct{}) {
	if ps, ok := l.store.(PauseStamper); ok {
		if _, err := ps.StampPause(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("cannot record when the pause key was set; hmssync status shows no time for it", zap.Error(err))
		}
	}
	for {
		t := time.NewTimer(l.cat.PollInterval)
		fired := false
		select {
		case <-t.C:
			fired = true
		case <-ctx.Done():
		case <-roleChanged:
		case <-pauseChanged:
		}
		t.Stop()
		if !fired {
			return
		}
		_, _ = l.currentEventID(ctx) // currentEventID records a failure
		if l.pause.notFresh() != nil {
			return
		}
	}
}
