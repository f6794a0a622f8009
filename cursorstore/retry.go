package cursorstore

import (
	"context"
	"math/rand/v2"
	"time"
)

// retryDelay is a capped exponential backoff with jitter, so that sidecars that
// lost etcd together do not come back in lockstep.
type retryDelay struct {
	min, max, next time.Duration
}

func newRetryDelay(min, max time.Duration) *retryDelay {
	return &retryDelay{min: min, max: max, next: min}
}

// step returns the next delay (jittered) and doubles the one after it.
func (d *retryDelay) step() time.Duration {
	cur := d.next
	d.next = min(d.next*2, d.max)
	return cur/2 + rand.N(cur/2+1)
}

// wait sleeps for the next delay; false if ctx ended first.
func (d *retryDelay) wait(ctx context.Context) bool {
	t := time.NewTimer(d.step())
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (d *retryDelay) reset() { d.next = d.min }
