package agent

import (
	"time"

	"github.com/hmssync/hmssync/internal/retry"
)

// newBackoff is the retry-in-place policy for transient failures: exponential,
// capped, with jitter, never giving up (a sidecar keeps trying until it is stopped).
func newBackoff(r Retry) *retry.Delay {
	return retry.NewDelay(r.Initial, r.Max)
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
	return retry.Jitter(d, 0.2)
}
