package hms

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
)

// conn is one Thrift connection to one metastore.
type conn struct {
	addr   string
	uri    string // as configured, for errors and logs
	nc     net.Conn
	nt     *netTransport
	client *hmsthrift.ThriftHiveMetastoreClient
	used   bool   // at least one call completed on it
	qop    string // the SASL QOP negotiated (auth, auth-int); empty without SASL
	limit  *replyLimit
}

// thriftConfig caps what a response may make the client allocate. A notification
// batch can be large (gzip messages of thousands of partitions), hence 1 GiB.
var thriftConfig = &thrift.TConfiguration{
	MaxMessageSize:     1 << 30,
	MaxFrameSize:       1 << 30,
	TBinaryStrictRead:  thrift.BoolPtr(true),
	TBinaryStrictWrite: thrift.BoolPtr(true),
}

// dialConn connects to addr with the configured transport stack: TLS optionally,
// then SASL (krb set), or a buffered (default) or framed transport, then the
// strict binary protocol. The dial timeout bounds the TLS handshake and the
// SASL negotiation too.
func dialConn(ctx context.Context, addr, uri string, cfg *ClientConfig, krb *kerberos) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		tc := cfg.TLS.Clone()
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tlsConn := tls.Client(nc, tc)
		if err := tlsConn.HandshakeContext(dctx); err != nil {
			nc.Close()
			return nil, newHandshakeError(tc.ServerName, err)
		}
		nc = tlsConn
	}
	limit := &replyLimit{}
	// The reply budget starts counting after the SASL negotiation, whose
	// frames are bounded by the SASL transport itself.
	nt := &netTransport{nc: nc}
	var trans thrift.TTransport = nt
	var qop string
	if krb != nil {
		st, q, err := negotiateSASL(dctx, nt, addr, uri, krb)
		if err != nil {
			nc.Close()
			return nil, err
		}
		trans, qop = st, q
	} else if cfg.Framed {
		trans = thrift.NewTFramedTransportConf(trans, thriftConfig)
	} else {
		trans = thrift.NewTBufferedTransport(trans, 64<<10)
	}
	nt.limit = limit
	proto := &limitedProtocol{TProtocol: newBinaryProtocol(trans, thriftConfig), limit: limit}
	return &conn{
		addr:   addr,
		nc:     nc,
		nt:     nt,
		qop:    qop,
		client: hmsthrift.NewThriftHiveMetastoreClient(thrift.NewTStandardClient(proto, proto)),
		limit:  limit,
	}, nil
}

// do runs one call bounded by ctx and by callTimeout: the socket deadline is the
// earlier of the two, and cancelling ctx expires it at once, so a stalled server
// cannot hold the caller. Its reply is bounded by lim (replylimit.go).
func (c *conn) do(ctx context.Context, callTimeout time.Duration, lim callLimit, fn func(context.Context, *hmsthrift.ThriftHiveMetastoreClient) error) error {
	c.limit.reset(lim.method, lim.maxElements, lim.maxBytes)
	deadline := time.Now().Add(callTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.nc.SetDeadline(deadline); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	err := fn(ctx, c.client)
	if err != nil && ctx.Err() != nil {
		// Report the caller's cancellation or deadline, not the socket's i/o timeout.
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	if err == nil {
		c.used = true
	}
	return err
}

func (c *conn) close() { c.nc.Close() }

// firstCallHint explains the failure of a connection's first call: a SASL
// metastore's refusal of a plain client (an ERROR frame in its reply, or a
// close, after which the metastore is asked whether it speaks SASL), or a
// transport that does not match.
func (c *Client) firstCallHint(ctx context.Context, cn *conn, err error) error {
	if h := httpReplyHint(cn.nt.head, cn.uri); h != nil {
		return fmt.Errorf("%w (%v)", h, err)
	}
	if h := saslReplyHint(cn.nt.head); h != nil {
		return fmt.Errorf("%w (%v)", h, err)
	}
	if h := c.saslProbeHint(ctx, cn.addr, err); h != nil {
		return fmt.Errorf("%w (%v)", h, err)
	}
	return withTransportHint(err)
}

// serverAnswered reports whether err is an answer from the metastore (an
// application exception or a declared exception), after which the connection is
// still in step; any other error leaves it unusable.
//
// The Thrift library reports a reply whose header does not match the call (a
// wrong method name, a bad sequence id, a message type other than REPLY) as an
// application exception too, but one it made itself, before reading the
// reply's body: that body is still on the connection, and the next call would
// read it as its own reply. Those three kinds never count as an answer; a
// metastore that sent one itself only costs a reconnect.
func serverAnswered(err error) bool {
	var ae thrift.TApplicationException
	if errors.As(err, &ae) {
		switch ae.TypeId() {
		case thrift.WRONG_METHOD_NAME, thrift.BAD_SEQUENCE_ID, thrift.INVALID_MESSAGE_TYPE_EXCEPTION:
			return false
		}
		return true
	}
	var me *hmsthrift.MetaException
	var nso *hmsthrift.NoSuchObjectException
	var sec *hmsthrift.ConfigValSecurityException
	return errors.As(err, &me) || errors.As(err, &nso) || errors.As(err, &sec)
}

// netTransport is a thrift.TTransport over a net.Conn that, unlike thrift.TSocket,
// leaves the connection's deadlines to the caller (conn.do sets them per call)
// and, once limit is set, counts what it reads against the call's reply budget.
// It keeps the first bytes it reads, so that a reply in an unexpected protocol
// can be recognised (saslReplyHint).
type netTransport struct {
	nc    net.Conn
	limit *replyLimit // nil: not counted (the SASL negotiation)
	head  []byte
}

// headLen is how many of a connection's first bytes netTransport keeps.
const headLen = 64

func (t *netTransport) Read(p []byte) (int, error) {
	if t.limit != nil {
		p = p[:t.limit.readCap(len(p))]
	}
	n, err := t.nc.Read(p)
	if len(t.head) < headLen {
		t.head = append(t.head, p[:min(n, headLen-len(t.head))]...)
	}
	if t.limit != nil {
		if lerr := t.limit.take(n); lerr != nil {
			return n, lerr
		}
	}
	return n, err
}

func (t *netTransport) Open() error                       { return nil }
func (t *netTransport) IsOpen() bool                      { return true }
func (t *netTransport) Close() error                      { return t.nc.Close() }
func (t *netTransport) Write(p []byte) (int, error)       { return t.nc.Write(p) }
func (t *netTransport) Flush(context.Context) error       { return nil }
func (t *netTransport) RemainingBytes() (numBytes uint64) { return ^uint64(0) }
