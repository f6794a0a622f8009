package agent

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/retry"
)

// signal is a broadcast: waiters take the current channel, and the next change
// closes it and installs a fresh one. It never loses a wake-up: a waiter that took
// the channel before a change sees it closed.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// watched holds the newest value of an etcd key that a store watch follows, and
// wakes waiters at each value. The store re-establishes its own watch through
// reconnects and compaction; a closed channel means it gave up (etcd gone for
// long), and watched starts over after a backoff.
type watched[T any] struct {
	name    string // the watch_restarts label
	open    func(ctx context.Context) <-chan T
	onValue func(prev T, known bool, v T) // metrics and logs; called in order
	m       *metrics
	log     *zap.Logger
	retry   Retry

	mu     sync.Mutex
	val    T
	known  bool // val holds a value the watch delivered
	up     bool // the watch is established (for /readyz)
	change *signal
}

// latest returns the newest value seen, and whether any was seen.
func (w *watched[T]) latest() (T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.val, w.known
}

func (w *watched[T]) healthy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.up
}

// changed is closed at the next delivered value.
func (w *watched[T]) changed() <-chan struct{} { return w.change.wait() }

func (w *watched[T]) run(ctx context.Context) {
	bo := newBackoff(w.retry)
	for ctx.Err() == nil {
		got := false
		for v := range w.open(ctx) {
			got = true
			bo.Reset()
			w.mu.Lock()
			prev, known := w.val, w.known
			w.val, w.known, w.up = v, true, true
			w.mu.Unlock()
			w.onValue(prev, known, v)
			w.change.fire()
		}
		w.mu.Lock()
		w.up = false
		w.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		w.m.watchRestarts.WithLabelValues(w.name).Inc()
		w.log.Warn(w.name+" watch ended; restarting", zap.Bool("delivered", got))
		if !retry.Sleep(ctx, bo.Next()) {
			return
		}
	}
}

// masterCursorWatch follows one catalog's committed master cursor. Followers wait
// on it instead of polling; the master uses it to notice an operator's set or
// reset while it is idle.
type masterCursorWatch = watched[cursorstore.Cursor]

func newMasterCursorWatch(catalog string, store CursorStore, m *metrics, log *zap.Logger, r Retry) *masterCursorWatch {
	return &masterCursorWatch{
		name: "master_cursor",
		open: func(ctx context.Context) <-chan cursorstore.Cursor { return store.WatchMaster(ctx, catalog) },
		onValue: func(_ cursorstore.Cursor, _ bool, c cursorstore.Cursor) {
			m.masterCursor.WithLabelValues(catalog).Set(float64(cursorValue(c)))
		},
		m: m, log: log, retry: r, change: newSignal(),
	}
}

// cursorValue is the cursor's value, -1 when the key is absent.
func cursorValue(c cursorstore.Cursor) int64 {
	if !c.Exists {
		return -1
	}
	return c.Value
}

// pauseWatch follows the operator's pause key.
type pauseWatch struct{ *watched[bool] }

func newPauseWatch(store CursorStore, m *metrics, log *zap.Logger, r Retry) *pauseWatch {
	return &pauseWatch{&watched[bool]{
		name: "pause",
		open: store.WatchPause,
		onValue: func(was, _ bool, p bool) {
			if p != was {
				if p {
					log.Warn("pause key present: the master stops advancing until it is removed")
				} else {
					log.Info("pause key removed: resuming")
				}
			}
			if p {
				m.paused.Set(1)
			} else {
				m.paused.Set(0)
			}
		},
		m: m, log: log, retry: r, change: newSignal(),
	}}
}

func (w *pauseWatch) isPaused() bool {
	p, _ := w.latest()
	return p
}
