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
	out, err := l.masterCycle(ctx, parent, term)
	if err != nil && ctx.Err() != nil && parent.Err() == nil {
		// The term ended while the step was in flight: whatever the step was
		// doing is abandoned, and the loop continues as a follower.
		return 0, errLostLeadership
	}
	return out, err
}

// parent outlives the step (the loop's context): a read-ahead started by this
// step runs on into the next one.
func (l *catalogLoop) masterCycle(ctx, parent context.Context, term election.Term) (outcome, error) {
	if out, done, err := l.masterPrepare(ctx, term); done {
		return out, err
	}
	cur, err := l.currentEventID(ctx)
	if err != nil {
		return 0, err
	}
	uuid, err := l.metastoreUUID(ctx)
	if err != nil {
		return 0, err
	}
	if out, done, err := l.masterCheckLog(ctx, term, cur, uuid); done {
		return out, err
	}

	var f hms.Fetch
	pre := l.takeReadAhead(ctx, l.masterKey(term.Token, l.own, l.cat.BatchSize))
	defer pre.settle()
	if pre != nil {
		f, err = pre.f, pre.fetchErr
	} else {
		f, err = l.fetch(ctx, l.own, l.cat.BatchSize, true)
	}
	if err != nil {
		return 0, err
	}
	switch f.Continuity {
	case hms.Gap:
		l.log.Warn("events after the cursor were cleaned from the metastore before they were read; full refresh",
			zap.Int64("cursor", l.own), zap.Int64("hms_current", cur))
		if err := l.fullRefresh(ctx, "gap", cur, true); err != nil {
			return 0, err
		}
		l.setOwn(cur)
		return again, l.commitWith(ctx, term, cur, uuid)
	case hms.Reset:
		// The fetch saw a current id below the cursor: that id, read from the
		// new log, is what the refresh is as of (the one read before the
		// fetch may belong to the old log).
		l.log.Warn("metastore's notification log was reset; full refresh into a new epoch",
			zap.Int64("cursor", l.own), zap.Int64("hms_current", f.Current))
		return l.startLineage(ctx, term, f.Current, "reset", uuid)
	}
	if len(f.Events) == 0 {
		to := f.Last
		if to <= l.own {
			// The metastore returned nothing at all (it honours the skip
			// list, and every event up to cur, which existed before the
			// fetch, is of a skipped type).
			to = cur
		}
		// Otherwise it returned only events of skipped types (it ignores the
		// skip list; the client filtered them): move past what was read, not
		// further, since kept events may follow.
		if err := l.applyEvents(ctx, nil, to, true); err != nil {
			return 0, err
		}
		l.setOwn(to)
		if err := l.commitWith(ctx, term, to, uuid); err != nil {
			return 0, err
		}
		if to < cur {
			return again, nil
		}
		// The log moved (by skipped events only): it is busy.
		return drained, nil
	}
	return l.masterApplyFetched(ctx, parent, term, f, pre, cur, uuid)
}

// masterPrepare readies a cycle: the committed cursor read, the pause key
// honoured, this member's cursor brought into the committed lineage and a
// pending commit made. done says the cycle ends here with out, err.
func (l *catalogLoop) masterPrepare(ctx context.Context, term election.Term) (out outcome, done bool, err error) {
	if err := l.syncLastSeen(ctx, term); err != nil {
		return 0, true, err
	}
	if held, err := l.pauseKeyPresent(ctx); err != nil {
		return 0, true, err
	} else if held {
		return paused, true, nil
	}
	// A cursor of another lineage (this member's durable cursor from before a
	// log reset another master handled, say) is never committed nor applied
	// from: the FE is refreshed into the committed lineage.
	l.leaveStaleLineage(l.lastSeen)
	// A commit left pending by an earlier failure (or by a previous term that
	// applied but could not commit) goes first.
	if err := l.commit(ctx, term, l.own); err != nil {
		return 0, true, err
	}
	return 0, false, nil
}

// masterCheckLog compares the metastore's log (its current id cur and its
// identity uuid) with the lineage before anything is fetched: another
// database, a log below what the lineage reached, an unknown cursor and an
// idle log each end the cycle (done).
func (l *catalogLoop) masterCheckLog(ctx context.Context, term election.Term, cur int64, uuid string) (out outcome, done bool, err error) {
	if recorded := l.lastSeen.Metastore; uuid != "" && recorded != "" && uuid != recorded {
		l.log.Warn("the metastore is another database than the one the committed cursor belongs to (its db uuid changed); full refresh into a new epoch",
			zap.String("metastore", uuid), zap.String("recorded", recorded), zap.Int64("hms_current", cur), zap.Int64("cursor", l.own))
		out, err := l.startLineage(ctx, term, cur, "reset", uuid)
		return out, true, err
	}
	// The highest id this lineage is known to have reached: the member's own
	// cursor, or the committed one when this master is still catching up to
	// it. A metastore whose current id is below it has a new log.
	high := l.own
	if committed := cursorValue(l.lastSeen); committed > high {
		high = committed
	}
	switch {
	case cur < high:
		l.log.Warn("metastore's current event id is below the cursor: its notification log was reset (new metastore database?); full refresh into a new epoch",
			zap.Int64("hms_current", cur), zap.Int64("cursor", l.own), zap.Int64("master_cursor", cursorValue(l.lastSeen)))
		out, err := l.startLineage(ctx, term, cur, "reset", uuid)
		return out, true, err
	case l.own == -1:
		// The id is read before the refresh: events after it are applied
		// afterwards, so nothing that happens during the refresh is missed.
		if err := l.fullRefresh(ctx, l.refreshReason, cur, true); err != nil {
			return 0, true, err
		}
		l.setOwnIn(cur, l.lastSeen.Epoch)
		return again, true, l.commitWith(ctx, term, cur, uuid)
	case cur == l.own:
		return idle, true, l.commitWith(ctx, term, cur, uuid)
	}
	// Something is to be applied: the FE first says it still holds what it
	// was sent (an idle poll does not ask it).
	if moved, err := l.checkFEApplied(ctx); err != nil || moved {
		return again, true, err
	}
	return 0, false, nil
}

// masterApplyFetched decodes the fetched batch f (pre: the read-ahead it came
// from, if any), gathers more for a cluster-scope dialect draining a backlog,
// applies and commits it.
func (l *catalogLoop) masterApplyFetched(ctx, parent context.Context, term election.Term, f hms.Fetch, pre *readAhead, cur int64, uuid string) (outcome, error) {
	var err error
	last := f.Last
	// Draining a backlog, read on before applying, so that one batch covers
	// several fetches. With a cluster-scope dialect (Doris) a batch covers up
	// to drainBatchEvents events: the FE then gets one REFRESH per table for
	// all of them rather than one per fetch (with a 1000-event fetch over 50
	// busy tables, the statements were four fifths of the drain's time), and
	// etcd one commit. Followers of such a dialect do not read the events, so
	// nothing waits on the commits in between. With a local-scope dialect
	// each commit releases the followers' own work, so a batch covers only
	// localDrainFetches fetches: enough to spread what each batch costs
	// besides its events (reading the committed cursor, the pause key, the
	// metastore's current id and the FE's applied id, one FE request, the
	// fenced commit and the member's cursor) over several fetches, while
	// the followers still start on the backlog after a few fetches. Only the
	// changes are kept between fetches, not the messages, so memory stays
	// that of two fetches: the one being decoded, and the next one, already
	// in flight (a read-ahead that only fetches). Anything unusual in a
	// further fetch (an error, a gap, nothing new) ends the batch; the next
	// cycle deals with it.
	n, fetches := len(f.Events)+f.Skipped, 1
	cluster := l.a.scope == applier.ScopeCluster
	gathering := func() bool {
		switch {
		case last >= cur:
			return false
		case cluster:
			return n < drainBatchEvents
		default:
			return fetches < localDrainFetches
		}
	}
	nextMax := func() int {
		if cluster {
			return min(l.cat.BatchSize, drainBatchEvents-n)
		}
		return l.cat.BatchSize
	}
	// readOn keeps the next fetch in flight while a fetch is decoded: while
	// the batch gathers, its next fetch (only fetched); once it is full and
	// more follows, the first fetch of the next batch (decoded too), read
	// while this one is decoded, applied and committed, with the fetch after
	// it chained (once this batch is decoded) when the next cycle will gather
	// it. Against a real metastore the fetch is most of the step's time, and
	// starting it only after the decode, or only once the next cycle has
	// made its calls, leaves the metastore waiting.
	chainBelow := cur
	if cluster && 2*l.cat.BatchSize > drainBatchEvents {
		// The next cycle's first fetch may fill its batch.
		chainBelow = 0
	}
	nextStarted := false
	startNext := func() {
		l.startReadAhead(parent, term, l.masterKey(term.Token, last, l.cat.BatchSize), true, chainBelow)
		nextStarted = true
	}
	readOn := func() {
		switch {
		case gathering():
			l.startReadAhead(parent, term, l.masterKey(term.Token, last, nextMax()), false, 0)
		case last < cur && !nextStarted:
			startNext()
		}
	}
	var d decoded
	readOn()
	took, err := pre.takeDecoded(l, &d)
	if !took && err == nil {
		err = l.decode(f.Events, &d, l.ahead != nil)
	}
	if err != nil {
		return 0, err
	}
	// Only the changes are kept: the first fetch's events go before the
	// next fetch is decoded.
	f.Events = nil
	pre.dropEvents()
	for gathering() {
		more, ok := l.gatherNext(ctx, l.masterKey(term.Token, last, nextMax()))
		if !ok {
			break
		}
		n += len(more.Events) + more.Skipped
		fetches++
		last = more.Last
		readOn()
		if err := l.decode(more.Events, &d, l.ahead != nil); err != nil {
			return 0, err
		}
	}
	if last < cur && !nextStarted {
		// The batch ended early (an error, a gap or nothing new in a
		// further fetch) and more is known to follow: read it while this
		// batch is applied and committed.
		startNext()
	}
	// Every fetch of this batch is decoded: the next batch's may chain.
	l.releaseReadAhead()
	if err := l.applyDecoded(ctx, &d, last, true); err != nil {
		return 0, err
	}
	l.setOwn(last)
	if err := l.commitWith(ctx, term, last, uuid); err != nil {
		return 0, err
	}
	if last < cur {
		// A backlog: drain it without waiting.
		return again, nil
	}
	return drained, nil
}

// drainBatchEvents is how many events the master of a cluster-scope dialect
// gathers into one batch while draining a backlog, in fetches of at most the
// batch size.
const drainBatchEvents = 10000

// localDrainFetches is how many fetches the master of a local-scope dialect
// gathers into one batch while draining a backlog. Against a real Hive 4.0.1
// metastore four fetches per batch drained about a quarter faster than one
// (BENCHMARKS.md); each further fetch delays the followers' start by one more.
const localDrainFetches = 4

// syncLastSeen makes sure the compare-and-set base is current: the committed
// cursor is read from etcd at the top of every cycle, so that an operator's set
// or reset is taken up before the cycle applies anything, however late the
// watch delivers it (a watch only wakes an idle master). The master's own
// commits come back with the revision it already holds, so they never count as
// someone else's.
func (l *catalogLoop) syncLastSeen(ctx context.Context, term election.Term) error {
	sameTerm := l.lastSeenTerm == term.Token
	if !sameTerm {
		// What the cursor holds at the start of a term is where the previous
		// master left it: this master catches up to it, it does not adopt it.
		l.haveLastSeen = false
	}
	c, err := l.a.cfg.Store.MasterCursor(ctx, l.cat.Name)
	if err != nil {
		return fmt.Errorf("read the master cursor from etcd: %w", err)
	}
	prev := l.lastSeen
	l.lastSeen, l.haveLastSeen, l.lastSeenTerm = c, true, term.Token
	switch {
	case c.Exists && c.Value == -1 && c.Rev != l.resetRev:
		l.resetRev = c.Rev
		if l.own != -1 {
			l.log.Warn("master cursor reset by an operator: full refresh", zap.Int64("cursor", l.own))
			l.resetOwn("operator")
		}
	case sameTerm && c.Rev != prev.Rev:
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
	n := c.Value
	if !c.Exists || n < 0 || l.own == -1 {
		// The master's own write whose outcome was unknown, or a full
		// refresh already pending, which covers any value.
		return
	}
	if c.Epoch != l.ownEpoch {
		// A lowered value starts a new epoch (SPEC §2a); this master's FE
		// follows the operator into it by continuing after the value, and
		// the followers, told by the epoch, full-refresh.
		l.ownEpoch = c.Epoch
		l.ownDirty = true
	}
	if n == l.own {
		return
	}
	continueAfter := n
	if prev.Exists && n < prev.Value && l.own < n {
		// Lowered while this master is still below the new value (catching
		// up after taking over): its own cursor already brings everything
		// after n to its FE, and jumping up to n would skip events it never
		// applied.
		continueAfter = l.own
	}
	l.log.Warn("master cursor set by an operator",
		zap.Int64("old", l.own), zap.Int64("new", n), zap.Int64("committed_before", cursorValue(prev)),
		zap.Int64("continue_after", continueAfter))
	if continueAfter == l.own {
		return
	}
	l.setOwn(continueAfter)
	// At once, not after the step: the step may apply for a while, and a
	// restart in between must resume from the operator's value, not the old one.
	l.persistOwn(ctx)
}

// commit writes value as the committed master cursor, continuing the
// committed lineage (see commitWith).
func (l *catalogLoop) commit(ctx context.Context, term election.Term, value int64) error {
	return l.commitWith(ctx, term, value, "")
}

// commitWith writes value as the committed master cursor within the committed
// epoch, fenced by the term's token and compare-and-set on the last seen
// revisions of the cursor and its epoch, recording the metastore's uuid when
// none is recorded yet. It writes nothing when the committed cursor is already
// at or beyond value (a new master still catching up to it), or when this
// member's cursor belongs to another epoch (leaveStaleLineage deals with it).
// A new lineage is committed by startLineage instead.
func (l *catalogLoop) commitWith(ctx context.Context, term election.Term, value int64, uuid string) error {
	if value < 0 || !l.haveLastSeen || (l.lastSeen.Exists && l.ownEpoch != l.lastSeen.Epoch) {
		return nil
	}
	recordUUID := uuid != "" && l.lastSeen.Metastore == ""
	if committed := cursorValue(l.lastSeen); value < committed || (value == committed && !recordUUID) {
		return nil
	}
	start := time.Now()
	c, err := l.a.cfg.Store.CommitMaster(ctx, l.cat.Name, term.Token, l.lastSeen, value, uuid)
	l.progressed()
	l.a.m.commitSeconds.WithLabelValues(l.cat.Name).Observe(time.Since(start).Seconds())
	if err != nil {
		return l.commitFailed(value, err)
	}
	l.lastSeen = c
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
	l.haveLastSeen = false
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
		l.a.m.fencedRejected.WithLabelValues(l.cat.Name, reason).Inc()
	}
	if reason == "not_leader" {
		// Stop writing at once: another member holds the role.
		l.log.Warn("fenced cursor commit refused: no longer master; stepping down", zap.Int64("cursor", value), zap.Error(err))
		l.a.cfg.Elector.StepDown("fenced cursor commit refused: " + err.Error())
		return errLostLeadership
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
