package agent

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
)

// startFromSeed starts this member from the catalog's seed (`hmssync cursor
// seed`, cursorstore/seed.go) instead of a full refresh, when own, its durable
// cursor as read at start, is not of the seed's lineage (absent, or of an
// earlier epoch) and the seed still starts the committed lineage (no log reset
// since). The seed says that every FE holds the metastore's state up to the
// seeded event (Doris's own sync kept it until the cut-over), so the member
// applies the events after it. It reports whether it did.
func (l *catalogLoop) startFromSeed(ctx context.Context, own cursorstore.Cursor) (bool, error) {
	m, err := l.store.MasterCursor(ctx, l.cat.Name)
	var bad *cursorstore.BadValueError
	if errors.As(err, &bad) {
		// Not a seed to start from: the step's own read of the committed
		// cursor reports the bad value and what to do.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the master cursor from etcd: %w", err)
	}
	sd := m.Seed
	if !sd.Exists || (own.Exists && own.Epoch >= sd.Epoch) {
		return false, nil
	}
	if sd.Bad != "" {
		l.log.Warn("the catalog's seed is unreadable; the first step full-refreshes", zap.String("reason", sd.Bad))
		return false, nil
	}
	if !m.Exists || m.Epoch != sd.Epoch {
		// A master started another lineage since (the log was reset): the
		// seed no longer says anything about this FE.
		return false, nil
	}
	start := sd.Value
	if l.scope == applier.ScopeCluster && m.Value > start {
		// The master's applies since the seed reached this FE through the
		// FE's own replication: a member joining later starts where the
		// master is, not at a seed weeks old.
		start = m.Value
	}
	l.cursor.seeded(start, sd.Epoch)
	l.log.Info("starting from the seeded cursor (hmssync cursor seed): no full refresh; the events after it are applied",
		zap.Int64("cursor", start), zap.Int64("seed", sd.Value), zap.Int64("epoch", sd.Epoch), zap.String("seeded_from", sd.From),
		zap.Int64("master_cursor", m.Value), zap.Bool("had_durable_cursor", own.Exists))
	return true, nil
}

// seeded starts the cursor at a seed's value in its lineage: nothing is due to
// be refreshed, nothing was sent to the FE yet, and etcd is to hold it.
func (c *memberCursor) seeded(value, epoch int64) {
	c.loaded = true
	c.value, c.epoch, c.sent, c.refreshWhy = value, epoch, -1, ""
	c.dirty = true
	c.publish()
}
