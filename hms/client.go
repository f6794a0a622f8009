package hms

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/internal/redact"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// URIs are the metastores, thrift://host:port (hive.metastore.uris). They are
	// shuffled once and walked in order; the first that answers is kept.
	URIs []string
	// DialTimeout bounds connecting (and the TLS handshake). Default 5s.
	DialTimeout time.Duration
	// CallTimeout bounds a call whose context has no earlier deadline. Default 60s.
	CallTimeout time.Duration
	// Framed selects the framed transport (hive.metastore.thrift.framed.transport.enabled).
	Framed bool
	// TLS, when set, wraps connections in TLS (hive.metastore.use.SSL).
	TLS *tls.Config
	// UGIUser, when set, is sent with set_ugi right after connecting, as the Java
	// client does on metastores without SASL. UGIGroups go with it.
	UGIUser   string
	UGIGroups []string
	// MaxReplyBytes bounds the bytes of one reply (replylimit.go). Default
	// DefaultMaxReplyBytes.
	MaxReplyBytes int64
	// Kerberos, when set, authenticates every connection with SASL GSSAPI
	// (hive.metastore.sasl.enabled=true). It excludes Framed.
	Kerberos *KerberosConfig
	// Logger receives connection changes. Default: no logging.
	Logger *zap.Logger
}

// Client is a Thrift client of one Hive Metastore service behind one or more
// URIs. It connects lazily, keeps one connection, fails over to the next URI
// when a connection breaks, and bounds every call by its context. It is safe for
// concurrent use; calls are serialised on the one connection.
type Client struct {
	cfg   ClientConfig
	addrs []string // host:port, in the shuffled order
	uris  []string // the URIs as configured, in the same order, for errors
	log   *zap.Logger
	sem   chan struct{} // held while a call uses the connection
	krb   *kerberos     // nil without Kerberos
	conn  *conn
	next  int // index of the address the next connection attempt starts at
	done  chan struct{}
	// identity is the metastore's db uuid as read on the connection it was
	// read on (identity.conn; guarded by sem).
	identity struct {
		conn *hmsthrift.ThriftHiveMetastoreClient
		uuid string
		ok   bool
	}
	// filterIgnored is set when the metastore answered a database-filtered
	// fetch with events of other databases (it does not know the request's
	// dbName, as Hive 3 does not): NextEventsOfDatabases then reads the log
	// unfiltered until the next connection, which may reach another server.
	filterIgnored atomic.Bool
	// largestReply is the most events one get_next_notification answered on
	// this connection: the server's cap on answers
	// (hive.metastore.max.event.response) is at least that, so an answer
	// with fewer events than that, and fewer than asked for, is complete.
	largestReply atomic.Int64
	// connections counts the connections made: a read made of several calls
	// (NextEventsOfDatabases) tells by it whether all were answered on the
	// connection its first call was, by one metastore reading one database.
	connections atomic.Uint64
}

// NewClient validates cfg and returns a client; it does not connect.
func NewClient(cfg ClientConfig) (*Client, error) {
	if len(cfg.URIs) == 0 {
		return nil, errors.New("hms client: no metastore URIs given; want thrift://host:port")
	}
	addrs := make([]string, 0, len(cfg.URIs))
	uris := make([]string, 0, len(cfg.URIs))
	for _, u := range cfg.URIs {
		addr, err := ParseURI(u)
		if err != nil {
			return nil, fmt.Errorf("hms client: %w", err)
		}
		addrs = append(addrs, addr)
		uris = append(uris, strings.TrimSpace(u))
	}
	if cfg.DialTimeout < 0 || cfg.CallTimeout < 0 {
		return nil, fmt.Errorf("hms client: negative timeout (dial %v, call %v)", cfg.DialTimeout, cfg.CallTimeout)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 60 * time.Second
	}
	if cfg.MaxReplyBytes < 0 {
		return nil, fmt.Errorf("hms client: negative reply budget %d", cfg.MaxReplyBytes)
	}
	if cfg.MaxReplyBytes == 0 {
		cfg.MaxReplyBytes = DefaultMaxReplyBytes
	}
	var krb *kerberos
	if cfg.Kerberos != nil {
		if cfg.Framed {
			return nil, configErrorf("hms client: hms_framed cannot be combined with hms_auth (Kerberos): Hive offers no framed transport with SASL")
		}
		var err error
		if krb, err = newKerberos(*cfg.Kerberos); err != nil {
			return nil, fmt.Errorf("hms client: %w", err)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	// Shuffle once so that many sidecars spread over the metastores (as Hive does).
	rand.Shuffle(len(addrs), func(i, j int) {
		addrs[i], addrs[j] = addrs[j], addrs[i]
		uris[i], uris[j] = uris[j], uris[i]
	})
	return &Client{cfg: cfg, addrs: addrs, uris: uris, log: log, krb: krb, sem: make(chan struct{}, 1), done: make(chan struct{})}, nil
}

// ParseURI returns the host:port of a thrift://host:port URI. A URI with user
// information is refused (and not repeated): a metastore URI carries no
// credentials, and this URI is logged on every connect.
func ParseURI(uri string) (string, error) {
	if redact.HasUserInfo(uri) {
		return "", fmt.Errorf("metastore URI %q: want no user information in the URI (the metastore user is hms_user; passwords belong in files)", redact.URL(uri))
	}
	u, err := url.Parse(strings.TrimSpace(uri))
	if err != nil || u.Scheme != "thrift" || u.Host == "" {
		return "", fmt.Errorf("metastore URI %q: want thrift://host:port", uri)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return "", fmt.Errorf("metastore URI %q: want thrift://host:port (the default port is 9083)", uri)
	}
	return u.Host, nil
}

// Close closes the connection; later calls fail.
func (c *Client) Close() error {
	select {
	case c.sem <- struct{}{}:
	case <-c.done:
		return nil
	}
	defer func() { <-c.sem }()
	select {
	case <-c.done:
		return nil
	default:
	}
	close(c.done)
	if c.conn != nil {
		c.conn.close()
		c.conn = nil
	}
	if c.krb != nil {
		c.krb.close()
	}
	return nil
}

var errClosed = errors.New("hms client is closed")

// call runs fn on the connection, connecting first if needed. A connection that
// breaks is dropped; if it had served calls before (the metastore may have closed
// it while idle) the call is retried once on a new connection, starting with the
// next URI. Every metastore call is a read, so a retry is safe.
func (c *Client) call(ctx context.Context, method string, fn func(context.Context, *hmsthrift.ThriftHiveMetastoreClient) error) error {
	return c.callLimited(ctx, c.limit(method, maxListingElements), fn)
}

// limit is the reply bound of a call whose containers may hold maxElements.
func (c *Client) limit(method string, maxElements int) callLimit {
	return callLimit{method: method, maxElements: maxElements, maxBytes: c.cfg.MaxReplyBytes}
}

// callLimited is call with the reply bounded by lim.
func (c *Client) callLimited(ctx context.Context, lim callLimit, fn func(context.Context, *hmsthrift.ThriftHiveMetastoreClient) error) error {
	method := lim.method
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("hms %s: waiting for the connection: %w", method, context.Cause(ctx))
	case <-c.done:
		return fmt.Errorf("hms %s: %w", method, errClosed)
	}
	defer func() { <-c.sem }()
	select {
	case <-c.done:
		return fmt.Errorf("hms %s: %w", method, errClosed)
	default:
	}
	for attempt := 0; ; attempt++ {
		if c.conn == nil {
			if err := c.connect(ctx); err != nil {
				return fmt.Errorf("hms %s: %w", method, err)
			}
		}
		cn := c.conn
		err := cn.do(ctx, c.cfg.CallTimeout, lim, fn)
		if err == nil || serverAnswered(err) {
			if err != nil {
				return fmt.Errorf("hms %s on %s: %w", method, cn.uri, err)
			}
			return nil
		}
		c.drop(cn, err)
		if attempt > 0 || !cn.used || ctx.Err() != nil {
			if !cn.used && ctx.Err() == nil {
				err = c.firstCallHint(ctx, cn, err)
			}
			return fmt.Errorf("hms %s on %s: %w", method, cn.uri, err)
		}
	}
}

// connect walks the URIs once from c.next and keeps the first that answers.
func (c *Client) connect(ctx context.Context) error {
	var errs attemptErrors
	allHinted := true // every failure says what to check itself
	for i := range c.addrs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("connecting: %w", context.Cause(ctx))
		}
		idx := (c.next + i) % len(c.addrs)
		addr := c.addrs[idx]
		cn, err := dialConn(ctx, addr, c.uris[idx], &c.cfg, c.krb)
		if err == nil && c.cfg.UGIUser != "" {
			err = cn.do(ctx, c.cfg.CallTimeout, c.limit("set_ugi", maxListingElements), func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
				_, err := cl.SetUgi(ctx, c.cfg.UGIUser, c.cfg.UGIGroups)
				return err
			})
			if err != nil {
				cn.close()
				err = fmt.Errorf("set_ugi(%q): %w", c.cfg.UGIUser, c.firstCallHint(ctx, cn, err))
			}
		}
		if err != nil {
			c.log.Warn("metastore unreachable", zap.String("uri", c.uris[idx]), zap.Error(err))
			errs = append(errs, fmt.Errorf("%s: %w", c.uris[idx], err))
			var he *handshakeError
			allHinted = allHinted && (errors.As(err, &he) || IsConfigError(err))
			continue
		}
		cn.uri = c.uris[idx]
		c.conn, c.next = cn, idx
		c.filterIgnored.Store(false)
		c.largestReply.Store(0)
		c.connections.Add(1)
		fields := []zap.Field{zap.String("uri", cn.uri)}
		if cn.qop != "" {
			fields = append(fields, zap.String("sasl_qop", cn.qop))
		}
		c.log.Info("connected to metastore", fields...)
		return nil
	}
	if allHinted {
		return fmt.Errorf("no metastore answered (%w)", errs)
	}
	return fmt.Errorf("no metastore answered (%w); check hms_uris and that the metastores run", errs)
}

// drop discards a broken connection; the next connection starts with another URI.
func (c *Client) drop(cn *conn, err error) {
	c.log.Warn("metastore connection broken", zap.String("uri", cn.uri), zap.Error(err))
	cn.close()
	c.conn = nil
	c.next = (c.next + 1) % len(c.addrs)
}

// CurrentEventID returns the id of the metastore's newest notification event
// (get_current_notificationEventId).
func (c *Client) CurrentEventID(ctx context.Context) (int64, error) {
	var id int64
	err := c.call(ctx, "get_current_notificationEventId", func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
		r, err := cl.GetCurrentNotificationEventId(ctx)
		if err == nil {
			id = r.EventId
		}
		return err
	})
	return id, err
}

// OldestEventID returns the id of the oldest event the metastore still keeps
// (get_next_notification(0, 1)); ok is false when the log is empty.
func (c *Client) OldestEventID(ctx context.Context) (id int64, ok bool, err error) {
	evs, err := c.nextNotification(ctx, 0, 1, nil)
	if err != nil || len(evs) == 0 {
		return 0, false, err
	}
	return evs[0].EventId, true, nil
}

func (c *Client) nextNotification(ctx context.Context, after int64, max int, skipTypes []string) ([]*hmsthrift.NotificationEvent, error) {
	return c.nextNotificationOf(ctx, after, max, skipTypes, "")
}

// nextNotificationOf is nextNotification asking, when db is not empty, for the
// events whose header names database db only (Hive 4's dbName filter).
func (c *Client) nextNotificationOf(ctx context.Context, after int64, max int, skipTypes []string, db string) ([]*hmsthrift.NotificationEvent, error) {
	req := &hmsthrift.NotificationEventRequest{LastEvent: after}
	if max > 0 {
		m := int32(min(max, 1<<31-1))
		req.MaxEvents = &m
	}
	if len(skipTypes) > 0 {
		req.EventTypeSkipList = skipTypes
	}
	if db != "" {
		req.DbName = &db
	}
	var evs []*hmsthrift.NotificationEvent
	err := c.callLimited(ctx, c.limit("get_next_notification", eventElements(max)), func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
		r, err := cl.GetNextNotification(ctx, req)
		if err == nil {
			evs = r.Events
			for n := int64(len(evs)); ; {
				old := c.largestReply.Load()
				if n <= old || c.largestReply.CompareAndSwap(old, n) {
					break
				}
			}
		}
		return err
	})
	return evs, err
}

// Databases lists the metastore's databases (get_all_databases).
func (c *Client) Databases(ctx context.Context) ([]string, error) {
	var dbs []string
	err := c.call(ctx, "get_all_databases", func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
		var err error
		dbs, err = cl.GetAllDatabases(ctx)
		return err
	})
	return dbs, err
}

// Ping checks that a metastore answers and reports itself alive (fb303 getStatus).
func (c *Client) Ping(ctx context.Context) error {
	return c.call(ctx, "getStatus", func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
		st, err := cl.GetStatus(ctx)
		if err == nil && st != hmsthrift.FbStatus_ALIVE && st != hmsthrift.FbStatus_WARNING {
			err = fmt.Errorf("metastore status is %v", st)
		}
		return err
	})
}
