package cursorstore

import (
	"fmt"
	"sync"
	"time"
)

// freshness is what one watch knows about its link to etcd: when etcd last
// answered it (a read, the watch's creation, an event or a progress
// notification) and, while it is re-establishing, why. SPEC §7's /readyz wants
// the watch "fresh": a watch on a silent gRPC stream delivers nothing and reports
// no error, so only the time since etcd last answered tells a quiet key from a
// lost etcd.
type freshness struct {
	key   string
	bound time.Duration

	mu    sync.Mutex
	heard time.Time // zero until etcd first answered
	down  error     // why the watch is being re-established; nil while it is up
}

func newFreshness(key string, bound time.Duration) *freshness {
	return &freshness{key: key, bound: bound}
}

// heardNow records an answer from etcd: the watch is up.
func (f *freshness) heardNow() {
	f.mu.Lock()
	f.heard, f.down = time.Now(), nil
	f.mu.Unlock()
}

// failed records that the watch is down and re-establishing because of err.
func (f *freshness) failed(err error) {
	f.mu.Lock()
	f.down = err
	f.mu.Unlock()
}

// silentFor is how long etcd has not answered (0 before it ever did).
func (f *freshness) silentFor(now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.heard.IsZero() {
		return 0
	}
	return now.Sub(f.heard)
}

// check returns nil while the watch is up and etcd answered within the bound,
// else why not, naming the key.
func (f *freshness) check(now time.Time) error {
	f.mu.Lock()
	heard, down := f.heard, f.down
	f.mu.Unlock()
	switch {
	case heard.IsZero() && down != nil:
		return fmt.Errorf("etcd watch of %s not established: %w", f.key, down)
	case heard.IsZero():
		return fmt.Errorf("etcd watch of %s not established yet", f.key)
	case down != nil:
		return fmt.Errorf("etcd watch of %s not fresh: reconnecting (last heard from etcd %s ago): %w",
			f.key, now.Sub(heard).Round(time.Millisecond), down)
	case now.Sub(heard) > f.bound:
		return fmt.Errorf("etcd watch of %s not fresh: last heard from etcd %s ago (bound %s); check the member's link to etcd",
			f.key, now.Sub(heard).Round(time.Millisecond), f.bound.Round(time.Millisecond))
	}
	return nil
}

// Watch is one running watch of a key, as WatchMaster and WatchPause return it.
type Watch[T any] struct {
	// C delivers the key's state: the current one first, then each change (a
	// slow reader gets the newest). It is closed when the watch's context ends.
	C     <-chan T
	fresh *freshness
}

// Fresh returns nil while the watch is established and etcd answered it within
// the store's freshness bound (three request timeouts); otherwise an error that names
// the key and says why (not established yet, reconnecting after an error, or
// silent for how long). The watch recovers by itself; Fresh follows it.
func (w Watch[T]) Fresh() error {
	if w.fresh == nil {
		return fmt.Errorf("etcd watch not started")
	}
	return w.fresh.check(time.Now())
}
