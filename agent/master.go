package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
)

// masterStep is one cycle of SPEC §2's master: read the metastore's current id,
// full-refresh when the cursor is unknown, the log was reset or events were
// cleaned, otherwise fetch the next batch, apply it and commit the cursor to etcd,
// fenced by the term's token.
func (l *catalogLoop) masterStep(parent context.Context, term election.Term) (outcome, error) {
	ctx, cancel := termContext(parent, term)
	defer cancel()
	out, err := l.masterCycle(ctx, term)
	if err != nil && ctx.Err() != nil && parent.Err() == nil {
		// The term ended while the step was in flight: whatever the step was
		// doing is abandoned, and the loop continues as a follower.
		return 0, errLostLeadership
	}
	return out, err
}

// masterCycle decides what the cycle does (pause, lineage, the log's state),
// then takes the next batch, decodes, applies and commits it.
func (l *catalogLoop) masterCycle(ctx context.Context, term election.Term) (outcome, error) {
	if held, err := l.masterPrepare(ctx, term); err != nil || held {
		return paused, err
	}
	cur, err := l.currentEventID(ctx)
	if err != nil {
		return 0, err
	}
	uuid, err := l.metastoreUUID(ctx)
	if err != nil {
		return 0, err
	}
	switch l.judgeLog(cur, uuid) {
	case logReplaced:
		return l.startLineage(ctx, term, cur, "reset", uuid)
	case logUnknownCursor:
		// The id is read before the refresh: events after it are applied
		// afterwards, so nothing that happens during the refresh is missed.
		if err := l.fullRefresh(ctx, l.cursor.refreshReason(), cur, true); err != nil {
			return 0, err
		}
		l.cursor.moveInto(cur, l.base.cursor().Epoch)
		return again, l.commit(ctx, term, cur, uuid)
	case logIdle:
		return idle, l.commit(ctx, term, cur, uuid)
	}
	// Something is to be applied: the FE first says it still holds what it
	// was sent (an idle poll does not ask it).
	if moved, err := l.checkFEApplied(ctx); err != nil || moved {
		return again, err
	}
	first, err := l.ahead.next(ctx, l.masterKey(term.Token, l.cursor.Value(), l.cat.BatchSize))
	if err != nil {
		return 0, err
	}
	switch first.Continuity {
	case hms.Gap:
		return l.masterAfterGap(ctx, term, cur, uuid)
	case hms.Reset:
		// The fetch saw a current id below the cursor: that id, read from the
		// new log, is what the refresh is as of (the one read before the
		// fetch may belong to the old log).
		l.log.Warn("metastore's notification log was reset; full refresh into a new epoch",
			zap.Int64("cursor", l.cursor.Value()), zap.Int64("hms_current", first.Current))
		return l.startLineage(ctx, term, first.Current, "reset", uuid)
	}
	if len(first.Events) == 0 {
		return l.masterSkip(ctx, term, first.Last, cur, uuid)
	}
	b, err := l.gather(ctx, first, l.masterPlan(term, cur))
	if err != nil {
		return 0, err
	}
	return l.masterApply(ctx, term, b, cur, uuid)
}

// masterAfterGap full-refreshes as of the metastore's current id cur when the
// events after the cursor were cleaned before they were read.
func (l *catalogLoop) masterAfterGap(ctx context.Context, term election.Term, cur int64, uuid string) (outcome, error) {
	l.log.Warn("events after the cursor were cleaned from the metastore before they were read; full refresh",
		zap.Int64("cursor", l.cursor.Value()), zap.Int64("hms_current", cur))
	if err := l.fullRefresh(ctx, "gap", cur, true); err != nil {
		return 0, err
	}
	l.cursor.moveTo(cur)
	return again, l.commit(ctx, term, cur, uuid)
}

// masterPrepare readies a cycle: the committed cursor read, the pause key
// honoured (held), this member's cursor brought into the committed lineage and
// a pending commit made.
func (l *catalogLoop) masterPrepare(ctx context.Context, term election.Term) (held bool, err error) {
	if err := l.syncCommitBase(ctx, term); err != nil {
		return false, err
	}
	if held, err := l.pauseKeyPresent(ctx); err != nil || held {
		return held, err
	}
	// A cursor of another lineage (this member's durable cursor from before a
	// log reset another master handled, say) is never committed nor applied
	// from: the FE is refreshed into the committed lineage.
	l.leaveStaleLineage(l.base.cursor())
	// A commit left pending by an earlier failure (or by a previous term that
	// applied but could not commit) goes first.
	return false, l.commit(ctx, term, l.cursor.Value(), "")
}

// logState is what the master finds the metastore's log to be, before anything
// is fetched.
type logState int

const (
	logAhead         logState = iota // events follow the cursor: fetch them
	logReplaced                      // another database, or a log below what the lineage reached
	logUnknownCursor                 // the cursor is unknown: full refresh
	logIdle                          // nothing new
)

// judgeLog compares the metastore's log (its current id cur and its identity
// uuid) with the lineage.
func (l *catalogLoop) judgeLog(cur int64, uuid string) logState {
	own, committed := l.cursor.Value(), l.base.cursor()
	if recorded := committed.Metastore; uuid != "" && recorded != "" && uuid != recorded {
		l.log.Warn("the metastore is another database than the one the committed cursor belongs to (its db uuid changed); full refresh into a new epoch",
			zap.String("metastore", uuid), zap.String("recorded", recorded), zap.Int64("hms_current", cur), zap.Int64("cursor", own))
		return logReplaced
	}
	// The highest id this lineage is known to have reached: the member's own
	// cursor, or the committed one when this master is still catching up to
	// it. A metastore whose current id is below it has a new log.
	high := max(own, cursorValue(committed))
	switch {
	case cur < high:
		l.log.Warn("metastore's current event id is below the cursor: its notification log was reset (new metastore database?); full refresh into a new epoch",
			zap.Int64("hms_current", cur), zap.Int64("cursor", own), zap.Int64("master_cursor", cursorValue(committed)))
		return logReplaced
	case own == -1:
		return logUnknownCursor
	case cur == own:
		return logIdle
	}
	return logAhead
}

// masterKey is the key of a master's fetch of up to max events after after, in
// term, acting on the committed cursor last seen.
func (l *catalogLoop) masterKey(term election.Token, after int64, max int) fetchKey {
	return fetchKey{term: term, ownEpoch: l.cursor.Epoch(), masterEpoch: l.base.cursor().Epoch,
		after: after, max: max, bound: noBound}
}

// masterPlan is the master's batch up to the metastore's current id cur.
func (l *catalogLoop) masterPlan(term election.Term, cur int64) batchPlan {
	p := batchPlan{term: term, key: l.masterKey(term.Token, l.cursor.Value(), l.cat.BatchSize),
		upTo: cur, chainBelow: cur, batchSize: l.cat.BatchSize}
	if l.scope == applier.ScopeCluster {
		p.maxEvents = drainBatchEvents
		if 2*l.cat.BatchSize > drainBatchEvents {
			// The next cycle's first fetch may fill its batch.
			p.chainBelow = 0
		}
	}
	return p
}

// masterSkip moves the master past a fetch that returned no event to keep, up
// to last (the fetch's last id).
func (l *catalogLoop) masterSkip(ctx context.Context, term election.Term, last, cur int64, uuid string) (outcome, error) {
	to := last
	if to <= l.cursor.Value() {
		// The metastore returned nothing at all (it honours the skip
		// list, and every event up to cur, which existed before the
		// fetch, is of a skipped type).
		to = cur
	}
	// Otherwise it returned only events of skipped types (it ignores the
	// skip list; the client filtered them): move past what was read, not
	// further, since kept events may follow.
	if err := l.applyEvents(ctx, nil, to); err != nil {
		return 0, err
	}
	l.cursor.moveTo(to)
	if err := l.commit(ctx, term, to, uuid); err != nil {
		return 0, err
	}
	if to < cur {
		return again, nil
	}
	// The log moved (by skipped events only): it is busy.
	return drained, nil
}

// masterApply applies the gathered batch b and commits its end; cur is the
// metastore's current id the cycle read.
func (l *catalogLoop) masterApply(ctx context.Context, term election.Term, b batch, cur int64, uuid string) (outcome, error) {
	if err := l.applyDecoded(ctx, &b.decoded, b.to); err != nil {
		return 0, err
	}
	l.cursor.moveTo(b.to)
	if err := l.commit(ctx, term, b.to, uuid); err != nil {
		return 0, err
	}
	if b.to < cur {
		// A backlog: drain it without waiting.
		return again, nil
	}
	return drained, nil
}

// syncCommitBase makes sure the compare-and-set base is current: the committed
// cursor is read from etcd at the top of every cycle, so that an operator's set
// or reset is taken up before the cycle applies anything, however late the
// watch delivers it (a watch only wakes an idle master). The master's own
// commits come back with the revision it already holds, so they never count as
// someone else's.
func (l *catalogLoop) syncCommitBase(ctx context.Context, term election.Term) error {
	sameTerm := l.base.beginCycle(term.Token)
	c, err := l.store.MasterCursor(ctx, l.cat.Name)
	if err != nil {
		return fmt.Errorf("read the master cursor from etcd: %w", err)
	}
	prev := l.base.read(c, term.Token)
	if !l.noticeOperatorReset(c) && sameTerm && c.Rev != prev.Rev {
		// Only this master's fenced commits and an operator's `cursor set`
		// write the key during its term: a revision it did not write is
		// the operator's.
		l.adoptOperatorCursor(ctx, prev, c)
	}
	return nil
}

// adoptOperatorCursor makes the master continue after the value an operator
// set (c; prev is the committed cursor it replaced): lowering it sends the
// events after it to this member's FE again, raising it skips the events up to
// it. Without this, the master's next commit of its own cursor would silently
// undo the operator's. A value beyond the metastore's current id is adopted
// too; the step then treats it as a reset of the metastore's log.
func (l *catalogLoop) adoptOperatorCursor(ctx context.Context, prev, c cursorstore.Cursor) {
	n, own := c.Value, l.cursor.Value()
	if !c.Exists || n < 0 || own == -1 {
		// The master's own write whose outcome was unknown, or a full
		// refresh already pending, which covers any value.
		return
	}
	// A lowered value starts a new epoch (SPEC §2a); this master's FE
	// follows the operator into it by continuing after the value, and the
	// followers, told by the epoch, full-refresh.
	l.cursor.followEpoch(c.Epoch)
	if n == own {
		return
	}
	continueAfter := n
	if prev.Exists && n < prev.Value && own < n {
		// Lowered while this master is still below the new value (catching
		// up after taking over): its own cursor already brings everything
		// after n to its FE, and jumping up to n would skip events it never
		// applied.
		continueAfter = own
	}
	l.log.Warn("master cursor set by an operator",
		zap.Int64("old", own), zap.Int64("new", n), zap.Int64("committed_before", cursorValue(prev)),
		zap.Int64("continue_after", continueAfter))
	if continueAfter == own {
		return
	}
	l.cursor.moveTo(continueAfter)
	// At once, not after the step: the step may apply for a while, and a
	// restart in between must resume from the operator's value, not the old one.
	l.persistOwn(ctx)
}

// commit writes value as the committed master cursor within the committed
// epoch, fenced by the term's token and compare-and-set on the last seen
// revisions of the cursor and its epoch, recording the metastore's uuid when
// none is recorded yet. It writes nothing when the committed cursor is already
// at or beyond value (a new master still catching up to it), or when this
// member's cursor belongs to another epoch (leaveStaleLineage deals with it).
// A new lineage is committed by startLineage instead.
func (l *catalogLoop) commit(ctx context.Context, term election.Term, value int64, uuid string) error {
	base := l.base.cursor()
	if value < 0 || !l.base.known() || (base.Exists && l.cursor.Epoch() != base.Epoch) {
		return nil
	}
	recordUUID := uuid != "" && base.Metastore == ""
	if committed := cursorValue(base); value < committed || (value == committed && !recordUUID) {
		return nil
	}
	start := time.Now()
	c, err := l.store.CommitMaster(ctx, l.cat.Name, cursorstore.Commit{Token: term.Token, Base: base, Value: value, Metastore: uuid,
		Txns: l.txnsToWrite(value, base.Txns)})
	l.progressed()
	l.rec.commitTook(time.Since(start))
	if err != nil {
		return l.commitFailed(value, err)
	}
	l.base.committed(c)
	l.logCommit(term, c)
	l.updateLag()
	return nil
}

// logCommit records a successful commit at debug level, with the term, so that
// an operator can tell who wrote a cursor.
func (l *catalogLoop) logCommit(term election.Term, c cursorstore.Cursor) {
	l.log.Debug("committed master cursor", zap.Int64("cursor", c.Value), zap.Int64("epoch", c.Epoch),
		zap.String("leader_key", term.Token.Key), zap.Int64("term", term.Token.Rev), zap.Int64("revision", c.Rev))
}

// commitFailed handles a fenced commit that did not succeed.
func (l *catalogLoop) commitFailed(value int64, err error) error {
	// Any failure leaves the base unknown: read it again before the next write.
	l.base.lost()
	reason := "error"
	switch {
	case errors.Is(err, cursorstore.ErrNotLeader):
		reason = "not_leader"
	case errors.Is(err, cursorstore.ErrConflict):
		reason = "conflict"
	case errors.Is(err, cursorstore.ErrOutcomeUnknown):
		reason = "outcome_unknown"
	case errors.Is(err, cursorstore.ErrBackwards):
		reason = "backwards"
	case errors.Is(err, cursorstore.ErrNewLineage):
		reason = "new_lineage"
	}
	if reason != "error" {
		l.rec.fenceRefused(reason)
	}
	if reason == "not_leader" {
		// Stop writing at once: another member holds the role.
		l.log.Warn("fenced cursor commit refused: no longer master; stepping down", zap.Int64("cursor", value), zap.Error(err))
		l.elector.StepDown("fenced cursor commit refused: " + err.Error())
		return errLostLeadership
	}
	if reason == "conflict" {
		// Only this master and an operator write the key during its term.
		l.log.Info("master cursor changed in etcd during this step (an operator's cursor set or reset): this commit is dropped and the next cycle takes up the operator's value",
			zap.Int64("cursor", value), zap.Error(err))
		return fmt.Errorf("commit master cursor %d: %w: %w", value, errCursorChangedUnder, err)
	}
	return fmt.Errorf("commit master cursor %d (%s): %w", value, reason, err)
}

// termContext ends with the parent or when the term ends.
func termContext(parent context.Context, term election.Term) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	if term.Done != nil {
		go func() {
			select {
			case <-term.Done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}
