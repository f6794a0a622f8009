package hmstest

import (
	"net"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hmssync/hmssync/hms/sasltest"
)

// WithSASL makes the server require a SASL GSSAPI negotiation on every
// connection before any call, as a metastore with
// hive.metastore.sasl.enabled=true does; acc verifies the client's Kerberos
// ticket with the service keytab. It combines with WithTLS (SASL inside TLS),
// not with WithFramed (Hive does not offer framing with SASL).
func WithSASL(acc *sasltest.Acceptor) Option { return func(s *Server) { s.sasl = acc } }

// saslTransport negotiates with the client and returns the data transport;
// ok is false when the client failed the negotiation (it was told why).
func (s *Server) saslTransport(nc net.Conn) (thrift.TTransport, bool) {
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	ctx, err := s.sasl.Negotiate(nc)
	if err != nil {
		s.mu.Lock()
		s.saslFailures++
		s.mu.Unlock()
		return nil, false
	}
	_ = nc.SetDeadline(time.Time{})
	s.mu.Lock()
	s.saslClients = append(s.saslClients, ctx.Client)
	s.mu.Unlock()
	return ctx.Transport(nc), true
}

// SASLClients lists the principals authenticated so far, one per connection.
func (s *Server) SASLClients() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.saslClients...)
}

// SASLFailures counts the connections whose negotiation failed.
func (s *Server) SASLFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saslFailures
}
