package cursorstore

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/election"
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
	// ErrNoMaster: SetMasterLed found no member campaigning for the master
	// role, so no running master would take the value up. Nothing was written.
	ErrNoMaster = errors.New("no member of the cluster campaigns for the master role")
)

// CommitMaster moves catalog's master cursor from lastSeen (as returned by
// MasterCursor, WatchMaster or the previous commit) to value, fenced by the
// master's token, in one transaction (SPEC §4):
//
//	If CreateRevision(tok.Key) == tok.Rev AND ModRevision(cursor) == lastSeen.Rev
//	Then Put(cursor, value) Else Get(tok.Key), Get(cursor)
//
// It returns the new cursor. Errors: ErrBackwards (value < lastSeen.Value, nothing
// sent), ErrNotLeader, ErrConflict (the returned Cursor is the current one), and
// ErrOutcomeUnknown.
func (s *Store) CommitMaster(ctx context.Context, catalog string, tok election.Token, lastSeen Cursor, value int64) (Cursor, error) {
	if lastSeen.Exists && value < lastSeen.Value {
		return lastSeen, fmt.Errorf("commit %s: %d -> %d: %w", s.keys.masterCursor(catalog), lastSeen.Value, value, ErrBackwards)
	}
	return s.fencedPut(ctx, catalog, tok, lastSeen, value)
}

// RewindMaster is CommitMaster without the backwards check, for the one case in
// which the master itself must lower the cursor: the HMS notification log was
// reset (a new metastore database, current event id below the cursor).
func (s *Store) RewindMaster(ctx context.Context, catalog string, tok election.Token, lastSeen Cursor, value int64) (Cursor, error) {
	c, err := s.fencedPut(ctx, catalog, tok, lastSeen, value)
	if err == nil && lastSeen.Exists && value < lastSeen.Value {
		s.log.Warn("master cursor rewound", zap.String("key", s.keys.masterCursor(catalog)),
			zap.Int64("old", lastSeen.Value), zap.Int64("new", value))
	}
	return c, err
}

func (s *Store) fencedPut(ctx context.Context, catalog string, tok election.Token, lastSeen Cursor, value int64) (Cursor, error) {
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
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(tok.Key), "=", tok.Rev),
			clientv3.Compare(clientv3.ModRevision(key), "=", lastSeen.Rev)).
		Then(clientv3.OpPut(key, formatCursor(value))).
		Else(clientv3.OpGet(tok.Key), clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return Cursor{}, fmt.Errorf("commit %s=%d: %w: %w (read the cursor before writing again)", key, value, ErrOutcomeUnknown, err)
	}
	if resp.Succeeded {
		v := formatCursor(value)
		return Cursor{Value: value, Exists: true, Rev: resp.Header.Revision, Raw: v}, nil
	}

	leader := resp.Responses[0].GetResponseRange().Kvs
	cur, parseErr := Cursor{}, error(nil)
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		cur, parseErr = parseCursor(key, kvs[0], s.masterFix(catalog))
	}
	if len(leader) == 0 || leader[0].CreateRevision != tok.Rev {
		return cur, fmt.Errorf("commit %s=%d with leader key %s@%d: %w", key, value, tok.Key, tok.Rev, ErrNotLeader)
	}
	if parseErr != nil {
		return cur, fmt.Errorf("commit %s=%d: %w: %w", key, value, ErrConflict, parseErr)
	}
	return cur, fmt.Errorf("commit %s=%d: last seen %s at revision %d, now %s at revision %d: %w",
		key, value, lastSeen, lastSeen.Rev, cur, cur.Rev, ErrConflict)
}
