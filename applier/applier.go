// Package applier applies change batches to a Doris frontend (FE). Three dialects
// exist: "doris" turns a batch into the fewest REFRESH statements and sends them
// through Doris's SQL-over-HTTP API; "native" posts the batch itself to the per-FE
// endpoint described in docs/fe-protocol.md; "log" is a dry run.
package applier

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hmssync/hmssync/change"
	"go.uber.org/zap"
)

// Scope says which sidecars apply changes.
type Scope string

const (
	// ScopeCluster: only the master applies, because the FE cluster spreads
	// what one FE receives to every FE (Doris replays REFRESH on all FEs).
	ScopeCluster Scope = "cluster"
	// ScopeLocal: every sidecar applies to its own FE.
	ScopeLocal Scope = "local"
)

// Applier applies batches of changes to one FE.
type Applier interface {
	// Dialect is "doris", "native" or "log".
	Dialect() string
	// Scope is the dialect's scope, or the one Config.Scope forced.
	Scope() Scope
	// Apply applies b (all of it, or fails). Applying the same batch again is
	// harmless. A failure is an *Error; use ClassOf to decide what to do.
	Apply(ctx context.Context, b change.Batch) error
	// Check proves the FE is reachable and accepts our credentials. It is cheap
	// enough for a readiness probe.
	Check(ctx context.Context) error
}

// The dialect names.
const (
	DialectDoris  = "doris"
	DialectNative = "native"
	DialectLog    = "log"
)

// DefaultTimeout bounds one statement (doris) or one request (native) when
// Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config configures an Applier. One Applier serves one FE: share it between the
// catalogs of that FE, because the doris dialect keeps at most one statement in
// flight per Applier.
type Config struct {
	Dialect string // doris | native | log
	// URL is the FE's HTTP address, e.g. http://127.0.0.1:8030 (not used by log).
	URL  string
	User string
	// Password comes from a file or the environment, never a flag; it is never
	// logged.
	Password string
	// Timeout bounds each statement or request; 0 means DefaultTimeout.
	Timeout time.Duration
	// Scope overrides the dialect's own scope; "" keeps it.
	Scope Scope
	// Client is the HTTP client to use (e.g. for TLS); nil means a client of
	// the applier's own. Its Timeout is not relied on: every call has a context
	// deadline.
	Client *http.Client
	Logger *zap.Logger
}

// New validates c and returns the Applier of its dialect.
func New(c Config) (Applier, error) {
	if c.Timeout < 0 {
		return nil, fmt.Errorf("fe.timeout %v: must be positive", c.Timeout)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch c.Scope {
	case "", ScopeCluster, ScopeLocal:
	default:
		return nil, fmt.Errorf("fe.scope %q: want %q or %q (or empty for the dialect's own)", c.Scope, ScopeCluster, ScopeLocal)
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	switch c.Dialect {
	case DialectLog:
		return newLog(c), nil
	case DialectDoris, DialectNative:
	default:
		return nil, fmt.Errorf("fe.dialect %q: want %s, %s or %s", c.Dialect, DialectDoris, DialectNative, DialectLog)
	}
	base, err := parseFEURL(c.URL)
	if err != nil {
		return nil, err
	}
	c.URL = base
	if c.Client == nil {
		c.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if c.Dialect == DialectDoris {
		return newDoris(c), nil
	}
	return newNative(c), nil
}

// parseFEURL checks that raw is an http(s) URL with a host and nothing after
// the path, and returns it without a trailing slash.
func parseFEURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("fe.url %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("fe.url %q: want http://host:port or https://host:port", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("fe.url %q: must not carry a query, fragment or credentials (credentials go in fe.user and fe.password_file)", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func scopeOr(forced, own Scope) Scope {
	if forced != "" {
		return forced
	}
	return own
}
