// Package hmstest is an in-process fake Hive Metastore for tests, in the manner of
// net/http/httptest: NewServer listens on 127.0.0.1:0 and speaks the real Thrift
// binary protocol (through the same generated code as the client), so the
// production client is exercised end to end. It keeps an append-only notification
// log, an object model (databases, tables, partitions) whose mutations append the
// events Hive would write, and controls for gaps, resets and faults.
package hmstest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/hms/sasltest"
)

// Server is a fake metastore. Its methods are safe for concurrent use.
type Server struct {
	framed    bool
	sasl      *sasltest.Acceptor // nil: no SASL (sasl.go)
	processor *hmsthrift.ThriftHiveMetastoreProcessor

	// TLS (tls.go); set up by Listen and read-only afterwards.
	tlsOn     bool
	clientCAs *x509.CertPool
	keyPair   *KeyPair
	tlsConfig *tls.Config

	mu     sync.Mutex
	addr   string
	ln     net.Listener // nil while down
	conns  map[net.Conn]context.CancelFunc
	faults map[string]*Fault
	calls  map[string]int
	closed bool
	wg     sync.WaitGroup
	// recordFetches turns the fetch log (fetchLog) on.
	recordFetches bool
	fetchLog      []ServedFetch
	// afterFetch runs after each answered get_next_notification (AfterFetch).
	afterFetch   func(ServedFetch)
	saslClients  []string
	saslFailures int

	log      eventLog
	model    model
	settings settings // get_config_value (config.go)
}

// Option configures a Server.
type Option func(*Server)

// WithFramed makes the server use the framed transport instead of the plain
// (buffered) one; clients must set ClientConfig.Framed.
func WithFramed() Option { return func(s *Server) { s.framed = true } }

// WithFormat sets the message format of events the mutations append.
func WithFormat(f Format) Option { return func(s *Server) { s.log.format = f } }

// WithClock sets where event times come from (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.log.now = now } }

// NewServer starts a fake metastore on 127.0.0.1 on a free port. It panics if it
// cannot listen, as httptest.NewServer does; use Listen to choose the address.
func NewServer(opts ...Option) *Server {
	s, err := Listen("127.0.0.1:0", opts...)
	if err != nil {
		panic(fmt.Sprintf("hmstest: %v", err))
	}
	return s
}

// Listen starts a fake metastore on addr (host:port).
func Listen(addr string, opts ...Option) (*Server, error) {
	s := &Server{
		conns:  map[net.Conn]context.CancelFunc{},
		faults: map[string]*Fault{},
		calls:  map[string]int{},
		log:    newEventLog(),
		model:  newModel(),
	}
	for _, o := range opts {
		o(s)
	}
	s.processor = hmsthrift.NewThriftHiveMetastoreProcessor(handler{s})
	if err := s.setUpTLS(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	return s, nil
}

// URI is the server's address as a metastore URI, thrift://127.0.0.1:PORT (also
// with TLS: Hive's URIs do not change scheme, the client configuration says TLS).
func (s *Server) URI() string { return "thrift://" + s.Addr() }

// Addr is the server's host:port.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// serve starts accepting on ln; s.mu must not be held.
func (s *Server) serve(ln net.Listener) {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return // closed by Down or Close
			}
			ctx, cancel := context.WithCancel(withConn(context.Background()))
			s.mu.Lock()
			if s.ln != ln {
				s.mu.Unlock()
				cancel()
				nc.Close()
				return
			}
			s.conns[nc] = cancel
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				// Faults and Down close the accepted connection itself, never the
				// TLS layer, whose Close could wait on a stuck write.
				s.serveConn(ctx, s.wrapConn(nc))
				s.dropConn(nc)
			}()
		}
	}()
}

func (s *Server) dropConn(nc net.Conn) {
	s.mu.Lock()
	cancel, ok := s.conns[nc]
	delete(s.conns, nc)
	s.mu.Unlock()
	if ok {
		cancel()
	}
	nc.Close()
}

// Down stops accepting connections and drops the open ones, as a metastore that
// went away. Up listens again on the same address.
func (s *Server) Down() {
	s.mu.Lock()
	ln := s.ln
	s.ln = nil
	conns := s.conns
	s.conns = map[net.Conn]context.CancelFunc{}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for nc, cancel := range conns {
		cancel()
		nc.Close()
	}
}

// Up listens again on the address the server had; it is a no-op if the server is
// up. It fails if another process took the port meanwhile.
func (s *Server) Up() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("hmstest: server is closed")
	}
	if s.ln != nil {
		s.mu.Unlock()
		return nil
	}
	addr := s.addr
	s.mu.Unlock()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("hmstest: listen again on %s: %w", addr, err)
	}
	s.serve(ln)
	return nil
}

// DropConnections closes every open connection but keeps listening, as a
// metastore restarting quickly or a load balancer dropping idle connections.
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[net.Conn]context.CancelFunc{}
	s.mu.Unlock()
	for nc, cancel := range conns {
		cancel()
		nc.Close()
	}
}

// Close shuts the server down and waits for its goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.Down()
	s.wg.Wait()
}

// Calls returns how many calls of method the server has received (faulted ones
// included).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// serveConn answers the calls of one connection until it breaks or is dropped.
// It reads each message header itself so that faults can be applied by method
// name, then hands the call to the generated processor.
func (s *Server) serveConn(ctx context.Context, nc net.Conn) {
	conf := &thrift.TConfiguration{MaxMessageSize: 1 << 30, MaxFrameSize: 1 << 30}
	var trans thrift.TTransport = &connTransport{nc: nc}
	if s.sasl != nil {
		var ok bool
		if trans, ok = s.saslTransport(nc); !ok {
			return
		}
	} else if s.framed {
		trans = thrift.NewTFramedTransportConf(trans, conf)
	} else {
		trans = thrift.NewTBufferedTransport(trans, 64<<10)
	}
	proto := thrift.NewTBinaryProtocolConf(trans, conf)
	for {
		name, _, seq, err := proto.ReadMessageBegin(ctx)
		if err != nil {
			return
		}
		f := s.takeFault(name)
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		if f.Drop {
			return
		}
		if f.Err != "" {
			if err := writeException(ctx, proto, name, seq, thrift.INTERNAL_ERROR, f.Err); err != nil {
				return
			}
			continue
		}
		pf, ok := s.processor.GetProcessorFunction(name)
		if !ok {
			if err := writeException(ctx, proto, name, seq, thrift.UNKNOWN_METHOD, "Invalid method name: '"+name+"'"); err != nil {
				return
			}
			continue
		}
		callCtx := ctx
		if f.Repeat {
			callCtx = context.WithValue(ctx, repeatKey{}, true)
		}
		var out thrift.TProtocol = proto
		if f.Misreply != "" {
			out = misreplyProtocol{TProtocol: proto, how: f.Misreply}
		}
		if _, err := pf.Process(callCtx, seq, proto, out); err != nil {
			var te thrift.TTransportException
			if errors.As(err, &te) {
				return
			}
		}
	}
}

// writeException skips the call's arguments and answers with an application
// exception, as a metastore does for a failing or unknown method.
func writeException(ctx context.Context, p thrift.TProtocol, name string, seq int32, kind int32, msg string) error {
	if err := p.Skip(ctx, thrift.STRUCT); err != nil {
		return err
	}
	if err := p.ReadMessageEnd(ctx); err != nil {
		return err
	}
	x := thrift.NewTApplicationException(kind, msg)
	if err := p.WriteMessageBegin(ctx, name, thrift.EXCEPTION, seq); err != nil {
		return err
	}
	if err := x.Write(ctx, p); err != nil {
		return err
	}
	if err := p.WriteMessageEnd(ctx); err != nil {
		return err
	}
	return p.Flush(ctx)
}

// connTransport is a thrift.TTransport over an accepted connection.
type connTransport struct{ nc net.Conn }

func (t *connTransport) Open() error                       { return nil }
func (t *connTransport) IsOpen() bool                      { return true }
func (t *connTransport) Close() error                      { return t.nc.Close() }
func (t *connTransport) Read(p []byte) (int, error)        { return t.nc.Read(p) }
func (t *connTransport) Write(p []byte) (int, error)       { return t.nc.Write(p) }
func (t *connTransport) Flush(context.Context) error       { return nil }
func (t *connTransport) RemainingBytes() (numBytes uint64) { return ^uint64(0) }
