package agent

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// followerStep is one step of SPEC §2's follower: it only ever moves towards the
// committed master cursor, never past it. The loop calls it again when the etcd
// watch reports that the master cursor moved; there is no polling timer.
//
// The watch only wakes the follower: what it acts on is the master cursor read
// from etcd at the start of the step. A value delivered by the watch may have
// waited in its channel across a gap in this process's execution (a paused
// process, a long apply), and a follower acting on it could take an old log's
// cursor for the new log's.
func (l *catalogLoop) followerStep(ctx context.Context) (outcome, error) {
	if m, known := l.watch.latest(); !known || !m.Exists || m.Value < 0 {
		// No master has committed yet (or an operator reset is in progress).
		return waitMaster, nil
	}
	m, err := l.a.cfg.Store.MasterCursor(ctx, l.cat.Name)
	if err != nil {
		return 0, fmt.Errorf("read the master cursor from etcd: %w", err)
	}
	if !m.Exists || m.Value < 0 {
		l.noticeOperatorReset(m)
		return waitMaster, nil
	}
	target := m.Value
	local := l.a.scope == applier.ScopeLocal
	// A cursor of another epoch says nothing about this FE: the log it
	// counted in was replaced, or an operator reset or lowered the cursor
	// while this member was busy, stopped or restarting.
	l.leaveStaleLineage(m)

	switch {
	case l.own == -1:
		if err := l.fullRefresh(ctx, l.refreshReason, target, local); err != nil {
			return 0, err
		}
		l.setOwnIn(target, m.Epoch)
		return again, nil
	case target == l.own:
		l.updateLag()
		return waitMaster, nil
	case target < l.own:
		// Ahead of the master within the same lineage: this member applied
		// beyond the commit when it was master, which is harmless and waits.
		// A log reset comes with a new epoch; the metastore is still asked,
		// for a master that has not committed one yet (or runs a version
		// without epochs, during a rolling upgrade).
		cur, err := l.currentEventID(ctx)
		if err != nil {
			return 0, err
		}
		if cur >= l.own {
			return waitMaster, nil
		}
		l.log.Warn("metastore's notification log was reset; full refresh",
			zap.Int64("cursor", l.own), zap.Int64("hms_current", cur), zap.Int64("master_cursor", target))
		if err := l.fullRefresh(ctx, "reset", target, local); err != nil {
			return 0, err
		}
		l.setOwn(target)
		return again, nil
	}

	if !local {
		// Cluster scope: the master's apply reached this member's FE through
		// the FE's own replication. Reading the events again would only load
		// the metastore, so the follower moves its cursor along.
		l.setOwn(target)
		return again, nil
	}
	if moved, err := l.checkFEApplied(ctx); err != nil || moved {
		return again, err
	}

	max := l.cat.BatchSize
	if d := target - l.own; d < int64(max) {
		max = int(d)
	}
	// No skip list to the metastore: it would count only kept events
	// towards max, and return events past the master cursor.
	var f hms.Fetch
	pre := l.takeReadAhead(ctx, l.followerKey(m.Epoch, l.own, max, target))
	defer pre.settle()
	if pre != nil {
		f, err = pre.f, pre.fetchErr
	} else {
		f, err = l.fetch(ctx, l.own, max, false)
	}
	if err != nil {
		return 0, err
	}
	if f.Continuity != hms.Contiguous {
		reason := "gap"
		if f.Continuity == hms.Reset {
			reason = "reset"
		}
		l.log.Warn("events after the cursor are gone from the metastore; full refresh",
			zap.String("reason", reason), zap.Int64("cursor", l.own), zap.Int64("master_cursor", target))
		if err := l.fullRefresh(ctx, reason, target, true); err != nil {
			return 0, err
		}
		l.setOwn(target)
		return again, nil
	}
	// Never past the master: events it has not committed are not ours yet.
	evs := belowBound(f.Events, target)
	// Move past what was read, skipped events included, and no further:
	// events that were not read may still be kept ones. Only a read that
	// returned nothing at all (no event between this cursor and the master's
	// exists any more in a log that still holds this cursor) jumps to it.
	to := min(f.Last, target)
	if f.Last <= l.own {
		to = target
	}
	// More committed than one fetch: gather up to localDrainFetches fetches
	// into one batch, as the master does, so that what a step costs besides
	// its events (reading the master cursor and the FE's applied id, one FE
	// request, the member's cursor) is paid once for all of them; the next
	// fetch is in flight while one is decoded (a read-ahead that only
	// fetches), and once the batch is full the next batch's first fetch is
	// read while this one is decoded and applied. Each fetch asks for no
	// more than min(batch_size, master − cursor), so nothing past the master
	// cursor is read. Anything unusual in a further fetch (an error, a gap,
	// nothing new) ends the batch; the next step deals with it.
	fetches := 1
	gathering := func() bool { return to < target && fetches < localDrainFetches }
	nextMax := func() int { return int(min(int64(l.cat.BatchSize), target-to)) }
	nextStarted := false
	startNext := func() {
		// Its next fetch chained, as the master's.
		l.startReadAhead(ctx, election.Term{}, l.followerKey(m.Epoch, to, nextMax(), target), true, target)
		nextStarted = true
	}
	readOn := func() {
		switch {
		case gathering():
			l.startReadAhead(ctx, election.Term{}, l.followerKey(m.Epoch, to, nextMax(), target), false, 0)
		case to < target && !nextStarted:
			startNext()
		}
	}
	readOn()
	var d decoded
	took, err := pre.takeDecoded(l, &d)
	if !took && err == nil {
		err = l.decode(evs, &d, l.ahead != nil)
	}
	if err != nil {
		return 0, err
	}
	// Only the changes are kept: the first fetch's events go before the
	// next fetch is decoded.
	evs, f.Events = nil, nil
	pre.dropEvents()
	for gathering() {
		more, ok := l.gatherNext(ctx, l.followerKey(m.Epoch, to, nextMax(), target))
		if !ok {
			break
		}
		fetches++
		to = min(more.Last, target)
		readOn()
		if err := l.decode(belowBound(more.Events, target), &d, l.ahead != nil); err != nil {
			return 0, err
		}
	}
	if to < target && !nextStarted {
		// The batch ended early and more is committed: read it while this
		// batch is applied.
		startNext()
	}
	// Every fetch of this batch is decoded: the next batch's may chain.
	l.releaseReadAhead()
	if err := l.applyDecoded(ctx, &d, to, true); err != nil {
		return 0, err
	}
	l.setOwn(to)
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
