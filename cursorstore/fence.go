package cursorstore

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/etcdcall"
)

// The outcomes of a fenced commit other than success. Test with errors.Is.
var (
	// ErrNotLeader: the token's leader key is gone or belongs to a newer term.
	// The caller is no longer master: stop writing and step down.
	ErrNotLeader = errors.New("not the leader: the fencing token's leader key is gone or was replaced")
	// ErrConflict: the cursor changed since lastSeen (an operator set it, or
	// another writer moved it). Read it again and decide anew.
	ErrConflict = errors.New("the cursor changed since it was read")
	// ErrOutcomeUnknown: the request failed in flight (timeout, connection
	// loss); the write may or may not have happened. Read before writing again.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrBackwards: the commit would lower the cursor. Only an explicit reset
	// (SetMaster, or RewindMaster after an HMS log reset) may do that.
	ErrBackwards = errors.New("the cursor would move backwards")
	// ErrNewLineage: the commit would continue the recorded lineage with a
	// cursor of another metastore. Nothing was written; the master must
	// full-refresh and commit with RewindMaster.
	ErrNewLineage = errors.New("the metastore differs from the one the committed cursor belongs to")
	// ErrNoMaster: SetMasterLed found no member campaigning for the master
	// role, so no running master would take the value up. Nothing was written.
	ErrNoMaster = errors.New("no member of the cluster campaigns for the master role")
)

// Commit is one fenced write of a catalog's master cursor: Value, written by the
// master holding Token, compare-and-set on Base (the cursor as MasterCursor,
// WatchMaster or the previous commit returned it). Metastore is the metastore's
// db uuid as the master reads it ("" when it offers none). Txns, when not "",
// is written as the open-transaction state as of Value (catalogs/<c>/txns) in
// the same transaction; "" leaves the key as it is (the state did not change).
type Commit struct {
	Token     election.Token
	Base      Cursor
	Value     int64
	Metastore string
	Txns      string
}

// MaxTxnsBytes bounds Commit.Txns and a member's state: etcd refuses requests
// over 1.5 MiB by default, and the state shares its request with the cursor.
const MaxTxnsBytes = 1 << 20

// CommitMaster moves catalog's master cursor from c.Base (lastSeen below) to
// c.Value (value) within lastSeen's epoch, fenced by the master's token (tok), in
// one transaction (SPEC §4, §2a):
//
//	If CreateRevision(tok.Key) == tok.Rev AND ModRevision(cursor) == lastSeen.Rev
//	   AND ModRevision(epoch) == lastSeen.EpochRev
//	Then Put(cursor, value) [, Put(epoch) when absent] [, Put(metastore) when first known]
//	Else Get(tok.Key), Get(catalog's keys)
//
// c.Metastore (metastore) is recorded when lastSeen has none. A different uuid than the
// recorded one is a new lineage: RewindMaster. It returns the new cursor. Errors:
// ErrBackwards (value < lastSeen.Value, nothing sent), ErrNewLineage (metastore
// differs from the recorded one, nothing sent), ErrNotLeader, ErrConflict (the
// returned Cursor is the current one: the cursor or its epoch moved), and
// ErrOutcomeUnknown.
func (s *Store) CommitMaster(ctx context.Context, catalog string, c Commit) (Cursor, error) {
	lastSeen, value, metastore := c.Base, c.Value, c.Metastore
	if lastSeen.Exists && value < lastSeen.Value {
		return lastSeen, fmt.Errorf("commit %s: %d -> %d: %w", s.keys.masterCursor(catalog), lastSeen.Value, value, ErrBackwards)
	}
	if metastore != "" && lastSeen.Metastore != "" && metastore != lastSeen.Metastore {
		return lastSeen, fmt.Errorf("commit %s=%d: metastore %s, recorded %s: %w", s.keys.masterCursor(catalog), value, metastore, lastSeen.Metastore, ErrNewLineage)
	}
	return s.fencedPut(ctx, catalog, c, lastSeen.Epoch)
}

// RewindMaster is the fenced commit of a new lineage: the master full-refreshed
// its FE because the metastore's notification log was reset (a new metastore
// database: the current event id below the cursor) or the metastore's identity
// changed. It writes c.Value (which may be lower than c.Base's) with epoch
// c.Base.Epoch+1, so that every member learns that its cursor, whatever its
// value, belongs to the old log. c.Metastore replaces the recorded uuid when
// not "".
func (s *Store) RewindMaster(ctx context.Context, catalog string, c Commit) (Cursor, error) {
	written, err := s.fencedPut(ctx, catalog, c, c.Base.Epoch+1)
	if err == nil {
		s.log.Warn("master cursor starts a new epoch", zap.String("key", s.keys.masterCursor(catalog)),
			zap.Stringer("old", c.Base), zap.Int64("new", c.Value), zap.Int64("old_epoch", c.Base.Epoch), zap.Int64("epoch", written.Epoch),
			zap.String("metastore", written.Metastore))
	}
	return written, err
}

// fencedPut sends the commit c with epoch.
func (s *Store) fencedPut(ctx context.Context, catalog string, commit Commit, epoch int64) (Cursor, error) {
	tok, lastSeen, value, metastore := commit.Token, commit.Base, commit.Value, commit.Metastore
	if err := s.check(catalogName(catalog)); err != nil {
		return Cursor{}, err
	}
	key := s.keys.masterCursor(catalog)
	if err := checkValue(value); err != nil {
		return Cursor{}, fmt.Errorf("commit %s: %w", key, err)
	}
	if lastSeen.Exists && lastSeen.Raw != "" && lastSeen.Raw != formatCursor(lastSeen.Value) {
		// lastSeen came with a BadValueError: overwriting it would silently
		// replace what someone put there.
		return lastSeen, &BadValueError{Key: key, Value: lastSeen.Raw, Reason: "not a decimal event id; the master does not overwrite it", Fix: s.masterFix(catalog)}
	}
	if !tok.Valid() {
		return Cursor{}, fmt.Errorf("commit %s=%d without a fencing token: %w", key, value, ErrNotLeader)
	}
	epochKey, uuidKey := s.keys.masterEpoch(catalog), s.keys.masterMetastore(catalog)
	ops := []clientv3.Op{clientv3.OpPut(key, formatCursor(value))}
	writeEpoch := epoch != lastSeen.Epoch || lastSeen.EpochRev == 0
	if writeEpoch {
		ops = append(ops, clientv3.OpPut(epochKey, formatCursor(epoch)))
	}
	writeUUID := metastore != "" && metastore != lastSeen.Metastore
	if writeUUID {
		ops = append(ops, clientv3.OpPut(uuidKey, metastore))
	}
	if len(commit.Txns) > MaxTxnsBytes {
		return Cursor{}, fmt.Errorf("commit %s=%d: the open-transaction state is %d bytes, more than %d", key, value, len(commit.Txns), MaxTxnsBytes)
	}
	if commit.Txns != "" {
		ops = append(ops, clientv3.OpPut(s.keys.masterTxns(catalog), commit.Txns))
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	// A member without a leader refuses the Txn before applying anything, so
	// etcdcall.Write sends it again (to the next endpoint); any other failure
	// leaves the outcome unknown.
	var resp *clientv3.TxnResponse
	err := etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		resp, err = s.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(tok.Key), "=", tok.Rev),
				clientv3.Compare(clientv3.ModRevision(key), "=", lastSeen.Rev),
				clientv3.Compare(clientv3.ModRevision(epochKey), "=", lastSeen.EpochRev)).
			Then(ops...).
			Else(clientv3.OpGet(tok.Key), clientv3.OpGet(s.keys.masterDir(catalog), clientv3.WithPrefix())).
			Commit()
		return err
	})
	if err != nil {
		return Cursor{}, fmt.Errorf("commit %s=%d: %w: %w (read the cursor before writing again)", key, value, ErrOutcomeUnknown, err)
	}
	if resp.Succeeded {
		rev := resp.Header.Revision
		c := Cursor{Value: value, Exists: true, Rev: rev, Raw: formatCursor(value),
			Epoch: epoch, EpochRev: lastSeen.EpochRev, Metastore: lastSeen.Metastore, MetastoreRev: lastSeen.MetastoreRev}
		if writeEpoch {
			c.EpochRev = rev
		}
		if writeUUID {
			c.Metastore, c.MetastoreRev = metastore, rev
		}
		c.Txns, c.TxnsRev = lastSeen.Txns, lastSeen.TxnsRev
		if commit.Txns != "" {
			c.Txns, c.TxnsRev = commit.Txns, rev
		}
		return c, nil
	}

	leader := resp.Responses[0].GetResponseRange().Kvs
	cur, parseErr := s.parseMaster(catalog, resp.Responses[1].GetResponseRange().Kvs)
	if len(leader) == 0 || leader[0].CreateRevision != tok.Rev {
		return cur, fmt.Errorf("commit %s=%d with leader key %s@%d: %w", key, value, tok.Key, tok.Rev, ErrNotLeader)
	}
	if parseErr != nil {
		return cur, fmt.Errorf("commit %s=%d: %w: %w", key, value, ErrConflict, parseErr)
	}
	return cur, fmt.Errorf("commit %s=%d: last seen %s (epoch %d) at revision %d, now %s (epoch %d) at revision %d: %w",
		key, value, lastSeen, lastSeen.Epoch, lastSeen.Rev, cur, cur.Epoch, cur.Rev, ErrConflict)
}
