package hmstest

import (
	"context"
	"sync"
)

// The fetch log records what get_next_notification answered and to whom, so that
// a test can check that a consumer never read events it had no business reading
// (a follower past the master cursor). It is off by default: a long-running
// `hmssync dev hms` would otherwise keep every answer.

// ServedFetch is one answered get_next_notification call.
type ServedFetch struct {
	// User is what the connection sent with set_ugi ("" if it sent nothing):
	// the way to tell consumers apart.
	User string
	// After and Max are the request's last event id and max events.
	After int64
	Max   int
	// DB is the request's dbName filter ("" none).
	DB string
	// Events is how many events the answer carried, MessageBytes the length
	// of their messages (what dominates a reply's size), Highest the largest
	// id among them (After when there were none).
	Events       int
	MessageBytes int
	Highest      int64
}

// RecordFetches starts recording every answered get_next_notification call.
func (s *Server) RecordFetches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordFetches = true
}

// Fetches returns the calls answered since RecordFetches, in order.
func (s *Server) Fetches() []ServedFetch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ServedFetch(nil), s.fetchLog...)
}

// AfterFetch makes fn run after each get_next_notification the server has
// answered (with what it answered; nil: nothing), so that a test can change
// the log between two calls of one client operation, as the metastore's
// cleaner or another writer may. fn runs on the serving goroutine, holding no
// lock of the server's.
func (s *Server) AfterFetch(fn func(ServedFetch)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afterFetch = fn
}

func (s *Server) recordFetch(f ServedFetch) {
	s.mu.Lock()
	fn := s.afterFetch
	if s.recordFetches {
		s.fetchLog = append(s.fetchLog, f)
	}
	s.mu.Unlock()
	if fn != nil {
		fn(f)
	}
}

// conn is what the server remembers about one connection across its calls.
type conn struct {
	mu   sync.Mutex
	user string
}

type connKey struct{}

func withConn(ctx context.Context) context.Context {
	return context.WithValue(ctx, connKey{}, &conn{})
}

// connOf returns the calling connection's state; a context without one (a
// direct handler call) gets a throwaway.
func connOf(ctx context.Context) *conn {
	if c, ok := ctx.Value(connKey{}).(*conn); ok {
		return c
	}
	return &conn{}
}

func (c *conn) setUser(u string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.user = u
}

func (c *conn) userName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user
}
