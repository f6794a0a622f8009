package agent

import (
	"context"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/hms"
)

// followerStep is one step of SPEC §2's follower: it only ever moves towards the
// committed master cursor, never past it. The loop calls it again when the etcd
// watch reports that the master cursor moved; there is no polling timer.
func (l *catalogLoop) followerStep(ctx context.Context) (outcome, error) {
	m, known := l.watch.latest()
	if !known || !m.Exists || m.Value < 0 {
		// No master has committed yet (or an operator reset is in progress).
		return waitMaster, nil
	}
	target := m.Value
	local := l.a.scope == applier.ScopeLocal

	switch {
	case l.own == -1:
		if err := l.fullRefresh(ctx, l.refreshReason, target, local); err != nil {
			return 0, err
		}
		l.setOwn(target)
		return again, nil
	case target == l.own:
		l.updateLag()
		return waitMaster, nil
	case target < l.own:
		// Ahead of the master: either this member applied beyond the commit
		// when it was master, which is harmless and waits, or the metastore's
		// log was reset and the master already moved the cursor down.
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

	max := l.cat.BatchSize
	if d := target - l.own; d < int64(max) {
		max = int(d)
	}
	f, err := l.fetch(ctx, l.own, max)
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
	evs := f.Events
	for len(evs) > 0 && evs[len(evs)-1].ID > target {
		evs = evs[:len(evs)-1]
	}
	if len(evs) == 0 {
		// Nothing but skipped events up to the master cursor.
		if err := l.applyEvents(ctx, nil, target, true); err != nil {
			return 0, err
		}
		l.setOwn(target)
		return again, nil
	}
	last := evs[len(evs)-1].ID
	if err := l.applyEvents(ctx, evs, last, true); err != nil {
		return 0, err
	}
	l.setOwn(last)
	return again, nil
}
