package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// The look-back (txnstate.go). A member whose open-transaction state knows
// nothing as of its cursor X (the cluster's first start, a seeded start, a
// state absent or unreadable in etcd, a full refresh after a gap or a log
// reset, the cursor moved by an operator or a replay) would take the commit of
// every transaction open at X for an unknown commit, a full refresh each; on a
// real Hive some transaction is nearly always open (every query opens one).
// Before it applies its next batch it therefore rebuilds the state from the
// log's window (max(0, X−W), X]: only the transaction events, through the
// state's own plan and adopt. What the window's commits yield is not applied
// (the FE holds everything up to X: a full refresh or the seed covers it), and
// its unknown commits are ignored. The rebuilt state knows every transaction
// opened inside the window (complete from the first OPEN_TXN seen there); only
// those opened before it and still open at X remain unknown commits.
//
// Bounded: one read of at most W events, in fetches of the catalog's batch
// size, each with the metastore call's deadline, and one fetch's transaction
// events held at a time. A read that fails leaves the state knowing nothing
// (the behaviour without a look-back): the loop goes on.

// DefaultTxnLookback is Catalog.TxnLookback's default, in events.
const DefaultTxnLookback = 100000

// txnLookback is the window's size in events; 0: no look-back.
func (l *catalogLoop) txnLookback() int64 {
	switch n := l.cat.TxnLookback; {
	case n < 0:
		return 0
	case n == 0:
		return DefaultTxnLookback
	default:
		return int64(n)
	}
}

// lookBackIfDue rebuilds the state as of the cursor when it knows nothing as
// of it (lookbackDue, or a state as of another id), before a batch is planned.
func (l *catalogLoop) lookBackIfDue(ctx context.Context) {
	x := l.cursor.Value()
	if !l.lookbackDue && l.txns.asOf == x {
		return
	}
	td, ok := l.cat.Decoder.(TxnDecoder)
	w := l.txnLookback()
	if !ok || w == 0 || x <= 0 {
		l.lookbackDue = false
		return
	}
	start := time.Now()
	s, read, err := l.readTxnWindow(ctx, td, max(0, x-w), x)
	if err != nil {
		if ctx.Err() != nil {
			return // the step ends with it; the next one looks back
		}
		l.lookbackDue = false
		l.txns.moveTo(x) // knows nothing as of the cursor: not read again for this one
		l.log.Warn("could not rebuild the open-transaction state from the log before the cursor; going on with one that knows no transaction (their commits refresh the catalog)",
			zap.Int64("cursor", x), zap.Int64("window_from", max(0, x-w)), zap.Error(err))
		return
	}
	l.lookbackDue = false
	l.txns = s
	l.rec.txnsOpen(s.size())
	l.log.Info("open-transaction state rebuilt from the log before the cursor",
		zap.Int64("cursor", x), zap.Int64("window_from", max(0, x-w)), zap.Int("events_read", read),
		zap.Int("open", s.size()), zap.Int64("complete_from", s.knownFrom), zap.Duration("took", time.Since(start)))
}

// readTxnWindow reads the log's events (from, to] and returns the state their
// transaction events leave, as of to, and how many events it read. Events
// cleaned below the window are not needed (the state starts from the oldest
// retained); a gap within it (the cleaner ran during the read) starts the state
// over after the gap, since what it held may miss what was cleaned.
func (l *catalogLoop) readTxnWindow(ctx context.Context, td TxnDecoder, from, to int64) (txnState, int, error) {
	s := newTxnStateAt(l.txns.lim, from)
	after, read := from, 0
	for after < to {
		f, err := l.fetchWindow(ctx, after, int(min(int64(l.cat.BatchSize), to-after)))
		if err != nil {
			return s, read, err
		}
		if f.Continuity == hms.Reset {
			return s, read, fmt.Errorf("the metastore's current id %d is below %d: its log was reset", f.Current, after)
		}
		evs := belowBound(f.Events, to)
		last := min(f.Last, to)
		if last <= after {
			return s, read, fmt.Errorf("the metastore returned no event after %d, below the cursor %d", after, to)
		}
		if f.Continuity == hms.Gap {
			s = newTxnStateAt(s.lim, after)
		}
		read += len(evs)
		p := s.plan(after, windowTxns(td, evs, l.cat.SkipEventTypes), l.keep)
		for reason, n := range p.dropped {
			l.rec.txnsDropped(reason, n)
		}
		s.adopt(p, last)
		after = last
	}
	return s, read, nil
}

// fetchWindow reads up to max events after the id after for the window: the
// whole log (transaction events name no database), with the call's deadline.
func (l *catalogLoop) fetchWindow(ctx context.Context, after int64, max int) (hms.Fetch, error) {
	ctx, cancel := context.WithTimeout(ctx, l.callTimeout())
	defer cancel()
	f, err := l.cat.Source.NextEvents(ctx, after, max, nil)
	l.progressed()
	l.rec.metastoreRead(err)
	if err != nil {
		return f, fmt.Errorf("fetch up to %d events after %d from the metastore: %w", max, after, err)
	}
	return f, nil
}

// windowTxns decodes the transaction events of evs (those of skipped types are
// left out, as the catalog's batches leave them out); one that cannot be
// decoded is lost, as in a batch.
func windowTxns(td TxnDecoder, evs []message.Event, skip []string) []txnEvent {
	var out []txnEvent
	for _, ev := range evs {
		if !message.IsTxnEvent(ev.Type) || slices.Contains(skip, ev.Type) {
			continue
		}
		t, err := td.DecodeTxn(ev)
		switch {
		case err != nil:
			out = append(out, txnEvent{id: ev.ID, time: int64(ev.Time), lost: true})
		case t.Kind != message.TxnNone:
			out = append(out, txnEvent{id: ev.ID, time: int64(ev.Time), txn: t})
		}
	}
	return out
}
