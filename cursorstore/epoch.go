package cursorstore

import (
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Epochs (SPEC §2a). A cursor value means "events up to N of one notification
// log, applied"; the epoch names that log's lineage. The committed epoch lives
// at catalogs/<c>/epoch and is written only in the transaction that writes the
// committed cursor: by the master's fenced commit, which keeps it (CommitMaster)
// or raises it by one when the cursor starts a new lineage (RewindMaster: the
// metastore's log was reset or its identity changed), and by an operator's
// `cursor set` / `cursor reset`, which raise it when the new value does not
// continue the old one (a reset, or a lower value). A member's durable cursor is
// written together with the epoch it belongs to (members/<m>/epochs/<c>), so a
// member that finds another epoch committed knows, without having watched the
// cursor move, that its FE belongs to another lineage. An absent epoch key is
// epoch 0: a cluster written before epochs reads as one lineage and keeps
// running after an upgrade.

// epoch is a parsed epoch key.
type epoch struct {
	value, rev int64
}

// parseEpoch reads an epoch key's kv (nil = absent: epoch 0).
func parseEpoch(key string, kv *mvccpb.KeyValue, fix string) (epoch, error) {
	if kv == nil {
		return epoch{}, nil
	}
	v, err := strconv.ParseInt(string(kv.Value), 10, 64)
	if err != nil || v < 0 {
		// The revision is kept: a fenced commit compares it, and one that
		// succeeds writes a good value over the bad one.
		return epoch{rev: kv.ModRevision}, &BadValueError{Key: key, Value: string(kv.Value), Reason: "not a decimal epoch (0 or more)", Fix: fix}
	}
	return epoch{value: v, rev: kv.ModRevision}, nil
}

func (s *Store) epochFix(catalog string) string {
	return fmt.Sprintf(`reset the catalog with "hmssync cursor reset --catalog %s --force", which writes a new epoch`, catalog)
}

// operatorEpoch is the epoch an operator's value starts or continues: raising
// the cursor continues the lineage (the members apply the events up to it, or
// skip them with the master); a reset or a lower value does not, since members
// that already applied beyond it would never be told.
func operatorEpoch(old Cursor, value int64) int64 {
	if value == Unknown || (old.Exists && value < old.Value) {
		return old.Epoch + 1
	}
	return old.Epoch
}
