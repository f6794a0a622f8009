package cursorstore

import (
	"context"
	"sync"
)

// latest is a mailbox that holds only the newest value. A watch writes into it
// without ever blocking on a slow reader, and the reader always ends up with the
// current state (intermediate values may be skipped, never the last one).
type latest[T any] struct {
	mu    sync.Mutex
	v     T
	ready chan struct{} // one token while an unread value is held
}

func newLatest[T any]() *latest[T] {
	return &latest[T]{ready: make(chan struct{}, 1)}
}

func (l *latest[T]) set(v T) {
	l.mu.Lock()
	l.v = v
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// forward sends each newest value to out until ctx ends.
func (l *latest[T]) forward(ctx context.Context, out chan<- T) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.ready:
		}
		l.mu.Lock()
		v := l.v
		l.mu.Unlock()
		select {
		case out <- v:
		case <-ctx.Done():
			return
		}
	}
}
