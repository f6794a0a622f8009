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

// masterCursorWatch follows one catalog's committed master cursor through an etcd
// watch. Followers wait on it instead of polling; the master uses it to notice an
// operator's reset while it is idle.
type masterCursorWatch struct {
	catalog string
	store   CursorStore
	m       *metrics
	log     *zap.Logger
	retry   Retry

	mu     sync.Mutex
	cur    cursorstore.Cursor
	known  bool // cur holds a value the watch delivered
	up     bool // the watch is established (for /readyz)
	change *signal
}

func newMasterCursorWatch(catalog string, store CursorStore, m *metrics, log *zap.Logger, retry Retry) *masterCursorWatch {
	return &masterCursorWatch{catalog: catalog, store: store, m: m, log: log, retry: retry, change: newSignal()}
}

// latest returns the newest committed cursor seen, and whether any was seen.
func (w *masterCursorWatch) latest() (cursorstore.Cursor, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur, w.known
}

func (w *masterCursorWatch) healthy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.up
}

// changed is closed at the next delivered value.
func (w *masterCursorWatch) changed() <-chan struct{} { return w.change.wait() }

func (w *masterCursorWatch) run(ctx context.Context) {
	bo := newBackoff(w.retry)
	for ctx.Err() == nil {
		ch := w.store.WatchMaster(ctx, w.catalog)
		got := false
		for c := range ch {
			got = true
			bo.Reset()
			w.mu.Lock()
			w.cur, w.known, w.up = c, true, true
			w.mu.Unlock()
			w.m.masterCursor.WithLabelValues(w.catalog).Set(float64(cursorValue(c)))
			w.change.fire()
		}
		w.mu.Lock()
		w.up = false
		w.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		// The store re-establishes its watch itself; a closed channel means it
		// gave up (etcd gone for long). Start over after a pause.
		w.m.watchRestarts.WithLabelValues("master_cursor").Inc()
		w.log.Warn("master cursor watch ended; restarting", zap.String("catalog", w.catalog), zap.Bool("delivered", got))
		if !retry.Sleep(ctx, bo.Next()) {
			return
		}
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
type pauseWatch struct {
	store CursorStore
	m     *metrics
	log   *zap.Logger
	retry Retry

	mu     sync.Mutex
	paused bool
	up     bool
	change *signal
}

func newPauseWatch(store CursorStore, m *metrics, log *zap.Logger, retry Retry) *pauseWatch {
	return &pauseWatch{store: store, m: m, log: log, retry: retry, change: newSignal()}
}

func (w *pauseWatch) isPaused() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused
}

func (w *pauseWatch) healthy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.up
}

func (w *pauseWatch) changed() <-chan struct{} { return w.change.wait() }

func (w *pauseWatch) run(ctx context.Context) {
	bo := newBackoff(w.retry)
	for ctx.Err() == nil {
		for p := range w.store.WatchPause(ctx) {
			bo.Reset()
			w.mu.Lock()
			was := w.paused
			w.paused, w.up = p, true
			w.mu.Unlock()
			if p != was {
				if p {
					w.log.Warn("pause key present: the master stops advancing until it is removed")
				} else {
					w.log.Info("pause key removed: resuming")
				}
			}
			if p {
				w.m.paused.Set(1)
			} else {
				w.m.paused.Set(0)
			}
			w.change.fire()
		}
		w.mu.Lock()
		w.up = false
		w.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		w.m.watchRestarts.WithLabelValues("pause").Inc()
		w.log.Warn("pause watch ended; restarting")
		if !retry.Sleep(ctx, bo.Next()) {
			return
		}
	}
}
