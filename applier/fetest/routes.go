package fetest

import (
	"context"
	"net/http"
	"time"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /api/query/{ns}/{db}", s.frontend(s.handleQuery))
	mux.Handle("GET "+nativePrefix+"/ping", s.frontend(s.handlePing))
	mux.Handle("GET "+nativePrefix+"/catalogs/{catalog}/state", s.frontend(s.handleState))
	mux.Handle("POST "+nativePrefix+"/catalogs/{catalog}/changes", s.frontend(s.handleChanges))
	mux.Handle("GET /_fetest/state", s.control(s.handleTestState))
	mux.Handle("GET /_fetest/summary", s.control(s.handleSummary))
	mux.Handle("POST /_fetest/drop-cache", s.control(s.handleDropCache))
	mux.Handle("GET /_fetest/faults", s.control(s.handleListFaults))
	mux.Handle("POST /_fetest/faults", s.control(s.handleAddFault))
	mux.Handle("DELETE /_fetest/faults", s.control(s.handleClearFaults))
	return mux
}

// frontend wraps the endpoints a real FE serves: it counts overlapping requests
// and logs each one.
func (s *Server) frontend(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			http.Error(w, "fetest: closed", http.StatusServiceUnavailable)
			return
		}
		defer s.active.Done()
		if s.inflight.Add(1) > 1 {
			s.overlaps.Add(1)
		}
		defer s.inflight.Add(-1)
		h(w, r)
	})
}

// control wraps the /_fetest endpoints, which tests and scripts use to steer and
// inspect the fake; they need no credentials.
func (s *Server) control(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			http.Error(w, "fetest: closed", http.StatusServiceUnavailable)
			return
		}
		defer s.active.Done()
		h(w, r)
	})
}

func (s *Server) authorised(r *http.Request) bool {
	u, p, ok := r.BasicAuth()
	return ok && u == s.user && p == s.pass
}

// wait sleeps for d unless the request or the server ends first.
// delay holds a request as its fault says (Delay, then Hold); false if the
// request or the server ended first.
func (s *Server) delay(ctx context.Context, f Fault) bool {
	if !s.wait(ctx, f.Delay) {
		return false
	}
	if f.Hold == nil {
		return true
	}
	select {
	case <-f.Hold:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}

func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}
