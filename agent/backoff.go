package agent

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// newBackoff is the retry-in-place policy for transient failures: exponential,
// capped, with ±50% jitter so that sidecars hitting the same outage do not retry in
// lock-step. It never gives up: a sidecar keeps trying until it is stopped.
func newBackoff(r Retry) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = r.Initial
	b.MaxInterval = r.Max
	b.Multiplier = 2
	b.RandomizationFactor = 0.5
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}

func (r Retry) orDefault() Retry {
	if r.Initial <= 0 {
		r.Initial = DefaultRetry.Initial
	}
	if r.Max <= 0 {
		r.Max = DefaultRetry.Max
	}
	if r.Max < r.Initial {
		r.Max = r.Initial
	}
	if r.AuthInterval <= 0 {
		r.AuthInterval = DefaultRetry.AuthInterval
	}
	return r
}

// jitter returns d ±20%, for the slow auth retry.
func jitter(d time.Duration) time.Duration {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = d
	b.RandomizationFactor = 0.2
	b.Reset()
	return b.NextBackOff()
}
