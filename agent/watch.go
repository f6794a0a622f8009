package agent

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/cursorstore"
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
// compaction, a lost etcd leader and broken or silent streams, and closes the
// channel only when ctx ends; whether the watch currently hears from etcd is the
// store watch's Fresh, which /readyz reports.
type watched[T any] struct {
	name    string // for /readyz and logs
	open    func(ctx context.Context) cursorstore.Watch[T]
	onValue func(prev T, known bool, v T) // metrics and logs; called in order
	log     *zap.Logger

	mu     sync.Mutex
	val    T
	known  bool         // val holds a value the watch delivered
	fresh  func() error // the running watch's Fresh; nil before run opened it
	change *signal
}

// latest returns the newest value seen, and whether any was seen.
func (w *watched[T]) latest() (T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.val, w.known
}

// notFresh says why the watch cannot be trusted to show the key's current state
// (SPEC §7: "etcd watch fresh"); nil when it can.
func (w *watched[T]) notFresh() error {
	w.mu.Lock()
	fresh, known := w.fresh, w.known
	w.mu.Unlock()
	if fresh == nil {
		return fmt.Errorf("%s watch not started", w.name)
	}
	if err := fresh(); err != nil {
		return err
	}
	if !known {
		return fmt.Errorf("%s watch has delivered no value yet", w.name)
	}
	return nil
}

// changed is closed at the next delivered value.
func (w *watched[T]) changed() <-chan struct{} { return w.change.wait() }

func (w *watched[T]) run(ctx context.Context) {
	wt := w.open(ctx)
	w.mu.Lock()
	w.fresh = wt.Fresh
	w.mu.Unlock()
	for v := range wt.C {
		w.mu.Lock()
		prev, known := w.val, w.known
		w.val, w.known = v, true
		w.mu.Unlock()
		w.onValue(prev, known, v)
		w.change.fire()
	}
	if ctx.Err() == nil {
		// Only a watch that could not start closes early (an invalid name,
		// which the configuration check rejects first); Fresh says why.
		w.log.Error(w.name+" watch ended before the sidecar stopped", zap.NamedError("why", wt.Fresh()))
	}
}

// masterCursorWatch follows one catalog's committed master cursor. Followers wait
// on it instead of polling; the master uses it to notice an operator's set or
// reset while it is idle.
type masterCursorWatch = watched[cursorstore.Cursor]

func newMasterCursorWatch(store CursorStore, catalog string, rec *recorder, log *zap.Logger) *masterCursorWatch {
	return &masterCursorWatch{
		name: "master cursor",
		open: func(ctx context.Context) cursorstore.Watch[cursorstore.Cursor] {
			return store.WatchMaster(ctx, catalog)
		},
		onValue: func(_ cursorstore.Cursor, _ bool, c cursorstore.Cursor) { rec.masterCursorSeen(c) },
		log:     log, change: newSignal(),
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

func newPauseWatch(store CursorStore, m *metrics, log *zap.Logger) *pauseWatch {
	return &pauseWatch{&watched[bool]{
		name: "pause key",
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
		log: log, change: newSignal(),
	}}
}

func (w *pauseWatch) isPaused() bool {
	p, _ := w.latest()
	return p
}
