package applier

import (
	"context"
	"fmt"

	"github.com/hmssync/hmssync/change"
	"go.uber.org/zap"
)

// Log is the dry-run dialect: it logs what it would apply and applies nothing. It
// logs both forms, the batch (what native would post) and the statements doris
// would send, so a dry run answers "what would hmssync do" for either dialect.
type Log struct {
	c Config
}

func newLog(c Config) *Log { return &Log{c: c} }

func (*Log) Dialect() string { return DialectLog }

// Scope is local unless forced, so that every sidecar of a dry run shows its
// work, followers included.
func (l *Log) Scope() Scope { return scopeOr(l.c.Scope, ScopeLocal) }

// Apply logs b at info: one line for the batch, one per statement; the
// descriptors themselves at debug. It fails only for a batch the real dialects
// would reject too, so a dry run exposes poison batches.
func (l *Log) Apply(_ context.Context, b change.Batch) error {
	if err := checkBatch(b); err != nil {
		return &Error{Class: Deterministic, Dialect: DialectLog, Err: fmt.Errorf("batch (%d, %d] of catalog %q: %w", b.From, b.To, b.Catalog, err)}
	}
	stmts := DorisStatements(b.Catalog, b)
	l.c.Logger.Info("dry run: would apply batch", zap.String("catalog", b.Catalog),
		zap.Int64("from_event_id", b.From), zap.Int64("to_event_id", b.To),
		zap.Bool("full_refresh", b.FullRefresh), zap.Int("changes", len(b.Changes)), zap.Int("statements", len(stmts)))
	for _, s := range stmts {
		l.c.Logger.Info("dry run: would send", zap.String("catalog", b.Catalog), zap.String("stmt", s))
	}
	if l.c.Logger.Core().Enabled(zap.DebugLevel) {
		for _, d := range b.Changes {
			l.c.Logger.Debug("dry run: change", zap.String("catalog", b.Catalog), zap.Any("descriptor", d))
		}
	}
	return nil
}

// Check always succeeds: there is no FE.
func (*Log) Check(context.Context) error { return nil }
