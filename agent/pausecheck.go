package agent

import (
	"context"
	"fmt"
	"time"
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

// pauseRecheck is the timer a master holding for the pause key also waits on
// while the pause watch is not fresh: that watch may never signal the key's
// removal, so the key is read again every poll interval. Nil (wait for the
// watch alone) while it is fresh.
func (l *catalogLoop) pauseRecheck() *time.Timer {
	if l.pause.notFresh() == nil {
		return nil
	}
	return time.NewTimer(l.cat.PollInterval)
}
