// Package fetest is a fake Doris frontend for tests, demos and `hmssync dev fe`:
// Doris's SQL-over-HTTP endpoint (/api/query) limited to the REFRESH statements
// and SELECT 1, the hmssync native endpoint (docs/fe-protocol.md), a model of
// what the FE's caches hold, and fault injection. It speaks the real wire
// formats, so the production appliers are exercised unchanged.
package fetest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hmssync/hmssync/change"
	"go.uber.org/zap"
)

// Options configures a fake FE.
type Options struct {
	// User and Password are the accepted credentials; an empty User means
	// "root", and Password defaults to empty, like a fresh Doris.
	User, Password string
	// Loader returns a catalog's truth (normally the fake metastore's
	// Snapshot). REFRESH statements and native full refreshes reload from it,
	// and REFRESH of an object it lacks answers "does not exist". Without a
	// Loader refreshes only record when they happened.
	Loader func(ctx context.Context, catalog string) (Truth, error)
	// Logger logs every request at debug; nil logs nothing.
	Logger *zap.Logger
	// Catalogs are the catalogs SHOW CATALOGS lists besides internal. When set,
	// the native per-catalog state answers 404 for any other catalog; nil
	// declares none and lets the native protocol serve every catalog.
	Catalogs []Catalog
	// TLS, when set, serves HTTPS with it (its Certificates, and ClientCAs
	// with ClientAuth to require client certificates); URL is then https://.
	TLS *tls.Config
}

// Server is one fake FE endpoint. In a Cluster several share one cache model.
type Server struct {
	// URL is http://host:port, stable across Down and Up.
	URL string

	addr    string
	user    string
	pass    string
	m       *model
	log     *zap.Logger
	faults  faults
	handler http.Handler
	// catalogs are Options.Catalogs.
	catalogs []Catalog
	tls      *tls.Config

	inflight atomic.Int64
	overlaps atomic.Int64

	// own is what this endpoint itself received; in a Cluster the model's
	// log has every endpoint's.
	ownMu         sync.Mutex
	ownStatements []string

	life      sync.Mutex // guards hs, serveDone, closed
	hs        *http.Server
	serveDone chan struct{}
	closed    bool
	closing   chan struct{}
	active    sync.WaitGroup // handlers and timers; Add only while !closed
}

// NewServer starts one FE with its own cache model on 127.0.0.1:0. It panics if
// it cannot listen, like httptest.NewServer.
func NewServer(o Options) *Server {
	s, err := ListenServer("127.0.0.1:0", o)
	if err != nil {
		panic(fmt.Sprintf("fetest: %v", err))
	}
	return s
}

// ListenServer starts one FE with its own cache model on addr.
func ListenServer(addr string, o Options) (*Server, error) {
	return listen(addr, o, newModel(o.Loader))
}

func listen(addr string, o Options, m *model) (*Server, error) {
	s := &Server{addr: addr, user: o.User, pass: o.Password, m: m, log: o.Logger, catalogs: o.Catalogs, tls: o.TLS, closing: make(chan struct{})}
	if s.user == "" {
		s.user = "root"
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.handler = s.routes()
	if err := s.Up(); err != nil {
		return nil, err
	}
	return s, nil
}

// Up (re)starts listening on the server's address.
func (s *Server) Up() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return errors.New("fetest: server is closed")
	}
	if s.hs != nil {
		return nil
	}
	var ln net.Listener
	var err error
	// The port of a listener just closed can take a moment to be free again.
	for deadline := time.Now().Add(2 * time.Second); ; {
		if ln, err = net.Listen("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("fetest: listen on %s: %w", s.addr, err)
	}
	if s.URL == "" { // first listen; afterwards the address is fixed
		s.addr = ln.Addr().String()
		s.URL = "http://" + s.addr
		if s.tls != nil {
			s.URL = "https://" + s.addr
		}
	}
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln) // returns when Down closes it
	}()
	s.hs, s.serveDone = hs, done
	return nil
}

// Down stops listening and drops open connections: clients see "connection
// refused" until Up.
func (s *Server) Down() {
	s.life.Lock()
	defer s.life.Unlock()
	s.downLocked()
}

func (s *Server) downLocked() {
	if s.hs == nil {
		return
	}
	_ = s.hs.Close()
	<-s.serveDone
	s.hs, s.serveDone = nil, nil
}

// Close stops the server for good and waits for its handlers to finish.
func (s *Server) Close() {
	s.life.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.downLocked()
	s.life.Unlock()
	s.active.Wait()
}

// enter registers a running handler; false once the server is closed.
func (s *Server) enter() bool {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return false
	}
	s.active.Add(1)
	return true
}

// InjectFault adds a fault to this endpoint.
func (s *Server) InjectFault(f Fault) { s.faults.add(f) }

// ClearFaults removes every fault of this endpoint.
func (s *Server) ClearFaults() { s.faults.clear() }

// Faults lists the endpoint's faults with their remaining uses.
func (s *Server) Faults() []Fault { return s.faults.snapshot() }

// Overlaps counts requests that arrived while another one was in flight on this
// endpoint (SQL and native requests; not the /_fetest control endpoints).
func (s *Server) Overlaps() int { return int(s.overlaps.Load()) }

// Snapshot returns what the cache of catalog holds (db -> table -> sorted
// partitions), or nil if the FE never initialised that catalog. It does not
// load anything.
func (s *Server) Snapshot(catalog string) Truth { return s.m.snapshot(catalog) }

// AppliedEventID is the to_event_id of the last native batch applied for
// catalog, -1 if none.
func (s *Server) AppliedEventID(catalog string) int64 { return s.m.appliedEventID(catalog) }

// Statements returns every SQL statement received (after authentication), in
// order, including those rejected or answered by a fault.
func (s *Server) Statements() []string {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return append([]string(nil), s.m.statements...)
}

// EndpointStatements returns the SQL statements this endpoint itself received,
// in order. For a lone Server it equals Statements; in a Cluster, Statements has
// every endpoint's, and this tells which endpoint a statement was sent to.
func (s *Server) EndpointStatements() []string {
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	return append([]string(nil), s.ownStatements...)
}

func (s *Server) recordStatement(stmt string) {
	s.ownMu.Lock()
	s.ownStatements = append(s.ownStatements, stmt)
	s.ownMu.Unlock()
	s.m.recordStatement(stmt)
}

// Changes returns every native batch received (after authentication, decoded),
// in order, with its catalog set.
func (s *Server) Changes() []change.Batch {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	out := make([]change.Batch, len(s.m.changes))
	for i, r := range s.m.changes {
		out[i] = r.Batch
		out[i].Catalog = r.Catalog
	}
	return out
}

// SetCache makes the cache of catalog hold exactly truth, as if the FE had
// loaded it then; useful to start from a known, possibly stale, state.
func (s *Server) SetCache(catalog string, truth Truth) { s.m.setCache(catalog, truth) }

// Restart forgets every cache and applied event id, as an FE restart would. In
// a Cluster this affects the shared model. The request logs are kept.
func (s *Server) Restart() { s.m.restart() }
