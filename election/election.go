// Package election elects the hmssync master among the sidecars of one cluster.
//
// Candidates use the key layout of etcd's concurrency.Election (one key per
// candidate, `<prefix>/<lease id in hex>`, value = member name, the lowest
// CreateRevision leads), so `etcdctl elect -l <prefix>` shows the master. The
// campaign itself is implemented here rather than with concurrency.Election because
// that Campaign cannot be abandoned while etcd is unreachable (its cleanup runs
// with the client's context, unbounded), and because every step needs a deadline.
package election

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Defaults for the zero values of Config.
const (
	DefaultLeaseTTL       = 10 * time.Second
	DefaultRequestTimeout = 3 * time.Second
	DefaultGateGrace      = 30 * time.Second
	DefaultGateInterval   = time.Second
)

// Config describes one member's candidacy.
type Config struct {
	// Client talks to etcd; the Elector never closes it.
	Client *clientv3.Client
	// Prefix is the election prefix, `<etcd prefix>/<cluster>/election`.
	Prefix string
	// Name is this member's name, stored as its candidate key's value.
	Name string
	// LeaseTTL is the session lease's time to live: how long a crashed master
	// blocks the election. Whole seconds; etcd's minimum is about 2 s.
	LeaseTTL time.Duration
	// RequestTimeout bounds every single etcd request; it must stay below
	// LeaseTTL/3 so that a keepalive can fail and be retried within one TTL.
	RequestTimeout time.Duration
	// CanLead is the candidacy gate (e.g. "my FE is healthy"). It is polled every
	// GateInterval and must return quickly. nil means always eligible.
	CanLead func() bool
	// GateGrace is how long a master tolerates CanLead returning false before it
	// resigns.
	GateGrace time.Duration
	// GateInterval is how often CanLead is polled.
	GateInterval time.Duration
	// Logger receives role changes and etcd trouble, with the member key
	// (Name) added by the elector: pass one without it. nil discards.
	Logger *zap.Logger
}

// Elector runs one member's candidacy. All methods are safe for concurrent use.
type Elector struct {
	cfg     Config
	log     *zap.Logger
	running atomic.Bool

	mu      sync.Mutex
	term    *termState // nil unless master
	leader  string     // as last observed in etcd ("" unknown)
	changed chan struct{}
}

// New validates cfg, fills in defaults and returns an Elector that does nothing
// until Run.
func New(cfg Config) (*Elector, error) {
	if cfg.Client == nil {
		return nil, errors.New("election: no etcd client")
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	if cfg.Prefix == "" {
		return nil, errors.New("election: empty prefix (want <etcd prefix>/<cluster>/election)")
	}
	if cfg.Name == "" {
		return nil, errors.New("election: empty member name")
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.GateGrace == 0 {
		cfg.GateGrace = DefaultGateGrace
	}
	if cfg.GateInterval == 0 {
		cfg.GateInterval = DefaultGateInterval
	}
	if cfg.LeaseTTL < time.Second || cfg.LeaseTTL%time.Second != 0 {
		return nil, fmt.Errorf("election: lease TTL %s: want whole seconds, at least 1s (etcd leases count seconds)", cfg.LeaseTTL)
	}
	if cfg.RequestTimeout <= 0 || cfg.RequestTimeout*3 >= cfg.LeaseTTL {
		return nil, fmt.Errorf("election: request timeout %s: want more than 0 and less than a third of the lease TTL %s, "+
			"so that a slow keepalive cannot lose the lease", cfg.RequestTimeout, cfg.LeaseTTL)
	}
	if cfg.GateGrace < 0 || cfg.GateInterval < 0 {
		return nil, fmt.Errorf("election: gate grace %s and gate interval %s must not be negative", cfg.GateGrace, cfg.GateInterval)
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Elector{
		cfg:     cfg,
		log:     log.With(zap.String("member", cfg.Name)),
		changed: make(chan struct{}),
	}, nil
}

// Current returns the current term while this member is master.
func (e *Elector) Current() (Term, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil {
		return Term{}, false
	}
	return e.term.term, true
}

// IsMaster reports whether this member is master right now.
func (e *Elector) IsMaster() bool {
	_, ok := e.Current()
	return ok
}

// Changed returns a channel that is closed at the next change of this member's
// role or of the observed leader. Call it again after it fires.
func (e *Elector) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// Leader returns the name of the current master as last seen in etcd, "" when
// there is none or it is unknown (etcd unreachable).
func (e *Elector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term != nil {
		return e.cfg.Name
	}
	if e.leader == e.cfg.Name {
		// Not master, yet the last leader observed is this member: a value
		// from before its term ended (its key lingers until the lease is
		// released). Who leads now is not known yet.
		return ""
	}
	return e.leader
}

// notifyLocked wakes everyone waiting on Changed. e.mu must be held.
func (e *Elector) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *Elector) setLeader(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leader == name {
		return
	}
	e.leader = name
	e.notifyLocked()
}
