package agent

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
)

// Config is what one sidecar needs: its identity, its collaborators and the
// per-catalog settings. It is built (and its values validated) by the command
// line; New checks only what would make the driver misbehave.
type Config struct {
	// Cluster and Member name this sidecar in etcd and in /status.
	Cluster, Member string
	// Version is reported in /status.
	Version string
	// FEURL is reported in /status (the applier holds the real connection).
	FEURL string

	// Applier applies batches to this member's FE.
	Applier applier.Applier
	// Scope says who applies: ScopeCluster means only the master (the FE
	// replicates), ScopeLocal means every member applies to its own FE. Empty
	// means the applier's own scope.
	Scope applier.Scope
	// FEHealth tracks whether the FE is reachable and accepts our credentials;
	// the same value should gate the elector's candidacy. Nil: New makes one.
	FEHealth *FEHealth

	Elector Elector
	Store   CursorStore
	// Status, when set, receives the member's status every StatusInterval and
	// at role changes, for `hmssync status`.
	Status         StatusPublisher
	StatusInterval time.Duration

	Catalogs []Catalog

	// Retry bounds the waits after failures.
	Retry Retry
	// SelfHealMaxPerHour is how many times one object may be healed in an
	// hour before it is reported as looping (heal.go). Zero: 6.
	SelfHealMaxPerHour int
	// StuckAfter is how long one external call of a step (a fetch, one FE
	// statement or request, a commit) may take before /livez reports the loop
	// as stuck; a step making many calls is measured from its last completed
	// call, not from its start. It must exceed every per-call deadline. Zero:
	// two minutes.
	StuckAfter time.Duration

	// WaitMaxTimeout is the longest timeout a request of /v1/wait may ask for
	// (http.wait_max_timeout; zero: DefaultWaitMaxTimeout), MaxWaiters how
	// many may wait at once, beyond which they are answered 429
	// (http.max_waiters; zero: DefaultMaxWaiters).
	WaitMaxTimeout time.Duration
	MaxWaiters     int

	Logger *zap.Logger
}

// Catalog is one metastore catalog synchronised into one FE catalog.
type Catalog struct {
	// Name is the FE's catalog name; it also names the cursor keys in etcd.
	Name      string
	Source    EventSource
	Decoder   EventDecoder
	BatchSize int
	// PollInterval is the longest wait between the master's polls of the
	// metastore (an idle log); BusyPollInterval the wait after a poll that
	// found events, doubled by every poll that finds none (pollSchedule).
	// Zero BusyPollInterval: 25 ms; at most PollInterval.
	PollInterval, BusyPollInterval time.Duration
	SkipEventTypes                 []string
	// CallTimeout bounds each metastore call (zero: 30 s).
	CallTimeout time.Duration
	// Include and Exclude are patterns on "db.table" (on "db." for
	// database-level changes) that must match the whole subject (anchor them:
	// ^(?:…)$). Empty Include means everything.
	Include, Exclude []*regexp.Regexp
	// NoPushdown keeps the master reading the whole log even when Include
	// names the databases literally (pushdownDatabases): for a metastore
	// whose notification listener names other databases in event headers
	// than Hive's does.
	NoPushdown bool
	// TxnTimeout is the metastore's hive.txn.timeout: open transactions
	// whose first write is older are dropped from the open-transaction
	// state (txnstate.go; zero: DefaultTxnTimeout, Hive's default).
	TxnTimeout time.Duration
	// TxnLookback is how many events before its cursor a member reads to
	// rebuild an open-transaction state that knows nothing as of the
	// cursor (lookback.go): zero DefaultTxnLookback, negative none.
	TxnLookback int
}

// Retry is the waiting policy after failures.
type Retry struct {
	// Initial and Max bound the exponential backoff (with jitter) used for
	// transient failures: an unreachable metastore, an FE timing out, etcd
	// unavailable.
	Initial, Max time.Duration
	// AuthInterval is the slow retry after the FE refused our credentials or
	// answered as no configured FE should (applier.Auth, applier.Configuration):
	// errors that retrying quickly cannot fix.
	AuthInterval time.Duration
}

// DefaultRetry is the policy used when Config.Retry is zero.
var DefaultRetry = Retry{Initial: 200 * time.Millisecond, Max: 30 * time.Second, AuthInterval: 30 * time.Second}

func (c *Config) check() error {
	var errs []error
	if c.Cluster == "" {
		errs = append(errs, errors.New("agent: cluster name is empty"))
	}
	if c.Member == "" {
		errs = append(errs, errors.New("agent: member name is empty"))
	}
	if c.Applier == nil {
		errs = append(errs, errors.New("agent: no applier"))
	}
	if c.Elector == nil {
		errs = append(errs, errors.New("agent: no elector"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("agent: no cursor store"))
	}
	if len(c.Catalogs) == 0 {
		errs = append(errs, errors.New("agent: no catalogs"))
	}
	seen := map[string]bool{}
	for i, cat := range c.Catalogs {
		switch {
		case cat.Name == "":
			errs = append(errs, fmt.Errorf("agent: catalogs[%d]: empty name", i))
		case seen[cat.Name]:
			errs = append(errs, fmt.Errorf("agent: catalogs[%d]: name %q used twice", i, cat.Name))
		}
		seen[cat.Name] = true
		if cat.Source == nil || cat.Decoder == nil {
			errs = append(errs, fmt.Errorf("agent: catalog %q: no event source or decoder", cat.Name))
		}
		if cat.BatchSize <= 0 {
			errs = append(errs, fmt.Errorf("agent: catalog %q: batch size %d, want > 0", cat.Name, cat.BatchSize))
		}
		if cat.PollInterval <= 0 {
			errs = append(errs, fmt.Errorf("agent: catalog %q: poll interval %s, want > 0", cat.Name, cat.PollInterval))
		}
		if cat.TxnTimeout < 0 {
			errs = append(errs, fmt.Errorf("agent: catalog %q: transaction timeout %s, want 0 (the default, %s) or more", cat.Name, cat.TxnTimeout, DefaultTxnTimeout))
		}
		if cat.BusyPollInterval < 0 || cat.BusyPollInterval > cat.PollInterval {
			errs = append(errs, fmt.Errorf("agent: catalog %q: busy poll interval %s, want 0 (the default) up to the poll interval %s", cat.Name, cat.BusyPollInterval, cat.PollInterval))
		}
	}
	if c.Scope != "" && c.Scope != applier.ScopeCluster && c.Scope != applier.ScopeLocal {
		errs = append(errs, fmt.Errorf("agent: scope %q, want cluster or local", c.Scope))
	}
	return errors.Join(errs...)
}
