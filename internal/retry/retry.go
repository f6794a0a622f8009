// Package retry paces the retries of calls to etcd, the metastore and FEs: a
// capped exponential backoff with jitter (so that sidecars that lost the same
// service together do not come back in lock-step) and a wait that ends with its
// context. The backoff itself is cenkalti/backoff's.
package retry

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Delay is a capped exponential backoff with ±50% jitter that never gives up: a
// sidecar keeps trying until it is stopped. It is not safe for concurrent use;
// each retry loop owns one.
type Delay struct {
	b *backoff.ExponentialBackOff
}

// NewDelay returns a Delay that starts at initial and doubles up to max.
func NewDelay(initial, max time.Duration) *Delay {
	if max < initial {
		max = initial
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = initial
	b.MaxInterval = max
	b.Multiplier = 2
	b.RandomizationFactor = 0.5
	b.MaxElapsedTime = 0
	b.Reset()
	return &Delay{b: b}
}

// Next returns the next (jittered) delay and grows the one after it.
func (d *Delay) Next() time.Duration { return d.b.NextBackOff() }

// Wait sleeps for the next delay; false if ctx ended first.
func (d *Delay) Wait(ctx context.Context) bool { return Sleep(ctx, d.Next()) }

// Reset starts again from the initial delay, after a success.
func (d *Delay) Reset() { d.b.Reset() }

// Jitter returns d ±fraction (0 < fraction < 1), for fixed-interval retries that
// should still not line up across sidecars. It never returns less than 1 ms: a
// retry loop waiting on it can never turn into a busy loop, whatever d is.
func Jitter(d time.Duration, fraction float64) time.Duration {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = d
	b.RandomizationFactor = fraction
	// The library's default MaxElapsedTime (15 min) makes NextBackOff return
	// Stop (-1 ns) for any interval that could pass it once jittered.
	b.MaxElapsedTime = 0
	b.Reset()
	return max(b.NextBackOff(), minJitter)
}

// minJitter is Jitter's floor.
const minJitter = time.Millisecond

// Sleep waits d or until ctx ends; it reports whether the full wait elapsed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
