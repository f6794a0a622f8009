package agent

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// followerStep is one step of SPEC §2's follower: it only ever moves towards the
// committed master cursor, never past it. The loop calls it again when the etcd
// watch reports that the master cursor moved; there is no polling timer.
func (l *catalogLoop) followerStep(ctx context.Context) (outcome, error) {
	m, ok, err := l.committedForFollower(ctx)
	if err != nil || !ok {
		return waitMaster, err
	}
	target, own := m.Value, l.cursor.Value()
	local := l.scope == applier.ScopeLocal
	// A cursor of another epoch says nothing about this FE: the log it
	// counted in was replaced, or an operator reset or lowered the cursor
	// while this member was busy, stopped or restarting.
	if l.leaveStaleLineage(m) {
		own = -1
	}
	switch {
	case own == -1:
		return l.followerRefreshTo(ctx, m, local)
	case target == own:
		l.updateLag()
		return waitMaster, nil
	case target < own:
		return l.followerAhead(ctx, target, local)
	}
	if !local {
		// Cluster scope: the master's apply reached this member's FE through
		// the FE's own replication. Reading the events again would only load
		// the metastore, so the follower moves its cursor along, and takes
		// the master's open transactions as of it, for the day it is master.
		l.cursor.moveTo(target)
		l.takeTxns(m.Txns, target, "the master's")
		// It reads no metastore: a failure it saw as master is no longer its.
		l.rec.metastoreRead(nil)
		return again, nil
	}
	if moved, err := l.checkFEApplied(ctx); err != nil || moved {
		return again, err
	}
	plan := l.followerPlan(m)
	// No skip list to the metastore: it would count only kept events
	// towards max, and return events past the master cursor.
	first, err := l.ahead.next(ctx, plan.key)
	if err != nil {
		return 0, err
	}
	if first.Continuity != hms.Contiguous {
		return l.followerRefill(ctx, first.Continuity, target)
	}
	b, err := l.gather(ctx, first, plan)
	if err != nil {
		return 0, err
	}
	if err := l.applyDecoded(ctx, &b.decoded, b.to); err != nil {
		return 0, err
	}
	l.cursor.moveTo(b.to)
	return again, nil
}

// followerRefreshTo full-refreshes a follower whose cursor is unknown as of the
// committed cursor m (its FE only when local: with cluster scope the master's
// applies reached it).
func (l *catalogLoop) followerRefreshTo(ctx context.Context, m cursorstore.Cursor, local bool) (outcome, error) {
	if err := l.fullRefresh(ctx, l.cursor.refreshReason(), m.Value, local); err != nil {
		return 0, err
	}
	l.cursor.moveInto(m.Value, m.Epoch)
	// The master's open transactions are as of the cursor this member now
	// holds too.
	l.takeTxns(m.Txns, m.Value, "the master's")
	return again, nil
}

// committedForFollower reads the committed master cursor the step acts on; ok is
// false while there is none to follow (no master has committed yet, or an
// operator reset is in progress).
//
// The watch only wakes the follower: what it acts on is the cursor read from
// etcd at the start of the step. A value delivered by the watch may have waited
// in its channel across a gap in this process's execution (a paused process, a
// long apply), and a follower acting on it could take an old log's cursor for
// the new log's.
func (l *catalogLoop) committedForFollower(ctx context.Context) (m cursorstore.Cursor, ok bool, err error) {
	if w, known := l.watch.latest(); !known || !w.Exists || w.Value < 0 {
		return m, false, nil
	}
	m, err = l.store.MasterCursor(ctx, l.cat.Name)
	if err != nil {
		return m, false, fmt.Errorf("read the master cursor from etcd: %w", err)
	}
	if !m.Exists || m.Value < 0 {
		l.noticeOperatorReset(m)
		return m, false, nil
	}
	return m, true, nil
}

// followerPlan is a follower's batch up to the committed cursor m: every fetch
// asks for no more than min(batch_size, master − cursor) events, so nothing past
// the master cursor is read.
func (l *catalogLoop) followerPlan(m cursorstore.Cursor) batchPlan {
	own := l.cursor.Value()
	max := int(min(int64(l.cat.BatchSize), m.Value-own))
	key := fetchKey{ownEpoch: l.cursor.Epoch(), masterEpoch: m.Epoch, after: own, max: max, bound: m.Value}
	return batchPlan{term: election.Term{}, key: key, upTo: m.Value, chainBelow: m.Value, batchSize: l.cat.BatchSize}
}

// followerAhead handles a follower ahead of the master within the same lineage:
// this member applied beyond the commit when it was master, which is harmless
// and waits. A log reset comes with a new epoch; the metastore is still asked,
// for a master that has not committed one yet (or runs a version without
// epochs, during a rolling upgrade).
func (l *catalogLoop) followerAhead(ctx context.Context, target int64, local bool) (outcome, error) {
	cur, err := l.currentEventID(ctx)
	if err != nil {
		return 0, err
	}
	if cur >= l.cursor.Value() {
		return waitMaster, nil
	}
	l.log.Warn("metastore's notification log was reset; full refresh",
		zap.Int64("cursor", l.cursor.Value()), zap.Int64("hms_current", cur), zap.Int64("master_cursor", target))
	if err := l.fullRefresh(ctx, "reset", target, local); err != nil {
		return 0, err
	}
	l.cursor.moveTo(target)
	return again, nil
}

// followerRefill full-refreshes a follower whose next events are gone from the
// metastore (a gap, or a reset log), as of the master cursor target.
func (l *catalogLoop) followerRefill(ctx context.Context, c hms.Continuity, target int64) (outcome, error) {
	reason := "gap"
	if c == hms.Reset {
		reason = "reset"
	}
	l.log.Warn("events after the cursor are gone from the metastore; full refresh",
		zap.String("reason", reason), zap.Int64("cursor", l.cursor.Value()), zap.Int64("master_cursor", target))
	if err := l.fullRefresh(ctx, reason, target, true); err != nil {
		return 0, err
	}
	l.cursor.moveTo(target)
	return again, nil
}

// belowBound returns the leading events of evs (ascending) with ids at or below
// bound.
func belowBound(evs []message.Event, bound int64) []message.Event {
	for len(evs) > 0 && evs[len(evs)-1].ID > bound {
		evs = evs[:len(evs)-1]
	}
	return evs
}
