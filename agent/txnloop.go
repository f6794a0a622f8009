package agent

import (
	"context"
	"slices"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/hms/message"
)

// The catalog loop's side of the open-transaction state (txnstate.go): reading
// transaction events into a batch, taking the state from etcd, writing it back
// with the cursors, and what an unknown commit costs.

// TrackedTxnState is the open-transaction state, as etcd holds it beside a
// member's cursor, of a member that read the log from its first transaction
// on and holds no open transaction that wrote a table: for a cursor seeded by
// hand (the benchmarks' drains) over a log whose transactions before the
// cursor wrote nothing still open. Without a state, a seeded member reads the
// log's window before its cursor first (the look-back, lookback.go), and
// takes the commit of a transaction opened before that window for an unknown
// commit (a full refresh).
func TrackedTxnState() string {
	s := newTxnState(defaultTxnLimits(0))
	s.knownFrom = 0
	return string(s.marshal())
}

// decodeTxn reads ev into d when it is a transaction event the decoder can
// read (TxnDecoder), placed after the changes decoded so far.
func (l *catalogLoop) decodeTxn(ev message.Event, d *decoded) error {
	td, ok := l.cat.Decoder.(TxnDecoder)
	if !ok || !message.IsTxnEvent(ev.Type) {
		return nil
	}
	t, err := td.DecodeTxn(ev)
	if err != nil || t.Kind == message.TxnNone {
		return err
	}
	d.txns = append(d.txns, txnEvent{id: ev.ID, time: int64(ev.Time), at: len(d.changes), txn: t})
	return nil
}

// takeTxns makes raw, the state etcd holds as of event id asOf (whose: for the
// log), this member's. A state that cannot be read is logged and replaced by
// one that knows nothing: the commits it would have answered are unknown
// commits.
func (l *catalogLoop) takeTxns(raw string, asOf int64, whose string) {
	var b []byte
	if raw != "" {
		b = []byte(raw)
	}
	s, err := loadTxnState(b, asOf, l.txns.lim)
	if err != nil {
		l.log.Warn("the open-transaction state in etcd cannot be read; starting from one that knows no transaction (their commits refresh the catalog)",
			zap.String("whose", whose), zap.Int64("cursor", asOf), zap.Error(err))
	}
	l.txns = s
	l.lookbackDue = s.knownFrom == -1
	l.rec.txnsOpen(s.size())
}

// txnsToWrite is the state as of value to write beside a cursor whose key now
// holds written: "" when it holds this already.
func (l *catalogLoop) txnsToWrite(value int64, written string) string {
	if value < 0 {
		return ""
	}
	if l.txns.asOf != value {
		l.lookbackDue = true // not as of the cursor: rebuilt before the next batch
	}
	l.txns.moveTo(value)
	s := string(l.txns.marshal())
	if s == written {
		return ""
	}
	return s
}

// txnsApplied takes the state tp computed once its batch (up to to) is applied,
// and reports what it dropped and why it found itself incomplete.
func (l *catalogLoop) txnsApplied(tp txnPlan, to int64) {
	l.txns.adopt(tp, to)
	l.rec.txnsOpen(l.txns.size())
	for reason, n := range tp.dropped {
		l.rec.txnsDropped(reason, n)
		l.log.Warn("open transactions dropped from the open-transaction state; their commits will refresh the catalog",
			zap.String("reason", reason), zap.Int("transactions", n), zap.Int("open", l.txns.size()), zap.Int64("cursor", to))
	}
	if tp.lost != "" {
		l.log.Info("the open-transaction state is incomplete until the next OPEN_TXN: commits of transactions opened before refresh the catalog",
			zap.String("why", tp.lost), zap.Int64("cursor", to))
	}
}

// skippedTxnTypes returns the transaction event types of skip that the state
// needs: without OPEN_TXN every commit is unknown (a full refresh), without
// ALLOC_WRITE_ID_EVENT every commit looks read-only, without COMMIT_TXN no
// write is ever refreshed.
func skippedTxnTypes(skip []string) []string {
	var out []string
	for _, t := range []string{message.EventOpenTxn, message.EventAllocWriteID, message.EventCommitTxn} {
		if slices.Contains(skip, t) {
			out = append(out, t)
		}
	}
	return out
}

// commitsApplied counts n COMMIT_TXN events, decoded as yielding no change,
// as applied: the state turned them into refreshes.
func (d *decoded) commitsApplied(n int) {
	if n > 0 {
		d.skipped.add(message.EventCommitTxn, -n)
		d.applied.add(message.EventCommitTxn, n)
	}
}

// maxTxnsLogged is how many unknown commits' transaction ids one log line names.
const maxTxnsLogged = 10

// refreshForUnknownCommits applies the batch d (up to to) as a full refresh:
// it commits transactions the state cannot answer for (opened before tracking
// began, the state lost or a bound exceeded), which may have written any table
// of the catalog. The refresh loads everything committed up to to, the batch's
// other changes included.
func (l *catalogLoop) refreshForUnknownCommits(ctx context.Context, d *decoded, tp txnPlan, to int64) error {
	ids := tp.unknown[:min(len(tp.unknown), maxTxnsLogged)]
	l.log.Warn("COMMIT_TXN of transactions the open-transaction state cannot answer for: full refresh of the catalog",
		zap.Int("unknown_commits", len(tp.unknown)), zap.Int64s("txns", ids), zap.String("why", tp.lost), zap.Int64("cursor", to))
	if err := l.fullRefresh(ctx, "txn_unknown", to, true); err != nil {
		return err
	}
	l.rec.txnUnknownCommits(len(tp.unknown))
	l.rec.eventsCovered(d)
	l.txnsApplied(tp, to)
	return nil
}
