package agent

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
)

// Lineage (SPEC §2a). A cursor means "events up to N of one notification log";
// the committed epoch names that log. Numbers seen at one instant cannot tell a
// member that was busy, stopped or restarted that the log it followed was
// replaced, so every member keeps the epoch its own cursor belongs to and never
// applies from a cursor of another epoch: its FE is brought into the committed
// lineage by a full refresh first.

// leaveStaleLineage makes the next step full-refresh when this member's cursor
// belongs to another epoch than committed (the committed cursor as just read).
// It reports whether it did.
func (l *catalogLoop) leaveStaleLineage(committed cursorstore.Cursor) bool {
	if l.cursor.unknown() || !committed.Exists || l.cursor.Epoch() == committed.Epoch {
		return false
	}
	l.log.Warn("this member's cursor belongs to another lineage than the committed cursor (the metastore's log was reset or an operator reset or lowered the cursor meanwhile): full refresh",
		zap.Int64("cursor", l.cursor.Value()), zap.Int64("epoch", l.cursor.Epoch()),
		zap.Int64("master_cursor", committed.Value), zap.Int64("master_epoch", committed.Epoch))
	l.cursor.reset("epoch")
	return true
}

// startLineage is the master's answer to a notification log that is not the
// one the committed cursor belongs to (reset, or another metastore): refresh the
// FE as of cur, which was read from the new log before the refresh, and commit
// cur as the first cursor of a new epoch. Whatever a member holds from the old
// log, it then finds another epoch committed and refreshes too.
func (l *catalogLoop) startLineage(ctx context.Context, term election.Term, cur int64, reason, uuid string) (outcome, error) {
	if err := l.fullRefresh(ctx, reason, cur, true); err != nil {
		return 0, err
	}
	if !l.base.known() {
		// The base is unknown (a failed read): the next cycle reads it and
		// finds the reset again.
		l.cursor.reset(reason)
		return again, nil
	}
	base := l.base.cursor()
	l.cursor.moveInto(cur, base.Epoch+1)
	start := time.Now()
	c, err := l.store.RewindMaster(ctx, l.cat.Name, cursorstore.Commit{Token: term.Token, Base: base, Value: cur, Metastore: uuid,
		Txns: l.txnsToWrite(cur, base.Txns)})
	l.progressed()
	l.rec.commitTook(time.Since(start))
	if err != nil {
		// Until the new epoch is committed, this member's cursor belongs to
		// no committed lineage: start over next cycle.
		l.cursor.reset(reason)
		return 0, l.commitFailed(cur, err)
	}
	l.base.committed(c)
	l.logCommit(term, c)
	l.updateLag()
	return again, nil
}

// metastoreUUID is the metastore's identity where its source offers one ("").
func (l *catalogLoop) metastoreUUID(ctx context.Context) (string, error) {
	id, ok := l.cat.Source.(MetastoreIdentifier)
	if !ok {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.callTimeout())
	defer cancel()
	uuid, ok, err := id.MetastoreUUID(ctx)
	if err != nil {
		return "", fmt.Errorf("read the metastore's db uuid: %w", err)
	}
	if !ok {
		return "", nil
	}
	return uuid, nil
}

// checkFEApplied compares what a local-scope FE reports as applied with this
// member's cursor before the next incremental batch. An FE below it lost what
// it had (a restart, a restore from an older state): it is brought back by
// replaying from its own id (a fetch that finds those events gone turns into a
// full refresh), or by a full refresh when it reports none at all. It reports
// whether it moved the cursor, in which case the step ends without applying.
func (l *catalogLoop) checkFEApplied(ctx context.Context) (bool, error) {
	rep, ok := l.applier.(AppliedReporter)
	own := l.cursor.Value()
	if !ok || l.scope != applier.ScopeLocal || own < 0 {
		return false, nil
	}
	fe, err := rep.AppliedEventID(ctx, l.cat.Name)
	if err != nil {
		if applier.ClassOf(err) == applier.Auth {
			return false, &applyError{from: own, to: own, err: fmt.Errorf("ask the FE which event it applied: %w", err)}
		}
		// The check is a safety net: an FE that cannot answer it is not a
		// reason to hold the batch (which fails by itself if the FE is
		// down), and an answer it cannot read must not make the member
		// self-heal over and over.
		l.log.Warn("could not ask the FE which event it applied; applying without that check", zap.Error(err))
		return false, nil
	}
	l.rec.feReported(fe)
	// What this member itself applied to the FE, not its cursor: an
	// operator's raise moves the cursor past events the FE never got, and
	// the FE's id catches up with the next batch.
	sent := l.cursor.lastSent()
	if fe >= sent || sent < 0 {
		return false, nil
	}
	if fe < 0 {
		l.log.Warn("the FE reports no applied event although this member's cursor is ahead: it restarted empty or was restored; full refresh",
			zap.Int64("cursor", own), zap.Int64("fe_applied", fe), zap.Int64("applied_by_this_member", sent))
		l.cursor.reset("fe_behind")
		return true, nil
	}
	l.log.Warn("the FE reports an applied event below this member's cursor (restored from an older state?): replaying from the FE's id",
		zap.Int64("cursor", own), zap.Int64("fe_applied", fe), zap.Int64("applied_by_this_member", sent))
	l.cursor.replayFrom(fe)
	return true, nil
}
