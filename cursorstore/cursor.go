package cursorstore

import (
	"context"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

// Unknown is the cursor value that forces a full refresh.
const Unknown int64 = -1

// Cursor is a cursor key as read from etcd.
type Cursor struct {
	// Value is the id of the last HMS event applied; -1 means unknown (full
	// refresh). Meaningless when !Exists.
	Value int64
	// Exists is false when the key is absent.
	Exists bool
	// Rev is the key's ModRevision, 0 when absent: the lastSeen of a
	// compare-and-set.
	Rev int64
	// Raw is the value as stored, for messages; it differs from Value's decimal
	// form only for a value that failed to parse (see BadValueError).
	Raw string

	// Epoch is the lineage Value belongs to (SPEC §2a): the epoch key's value,
	// 0 when that key is absent (a cluster from before epochs). EpochRev is the
	// epoch key's ModRevision, 0 when absent: the fenced commit compares it.
	Epoch, EpochRev int64
	// Metastore is the metastore's db uuid recorded for the lineage ("" when
	// none was recorded); master cursors only. MetastoreRev is its ModRevision.
	Metastore    string
	MetastoreRev int64
	// Txns is the open-transaction state written with the cursor (the
	// agent's JSON, as of Value; "" when the key is absent), TxnsRev its
	// ModRevision.
	Txns    string
	TxnsRev int64
}

// String is the cursor as `cursor get` prints it: the decimal value or "unset".
func (c Cursor) String() string {
	if !c.Exists {
		return "unset"
	}
	return strconv.FormatInt(c.Value, 10)
}

// BadValueError reports a key whose value is not what hmssync writes there (e.g.
// "abc" put by hand). hmssync never overwrites such a value on its own: the
// operator fixes it.
type BadValueError struct {
	Key, Value string
	Reason     string
	// Fix says what an operator can do about it.
	Fix string
}

func (e *BadValueError) Error() string {
	msg := fmt.Sprintf("etcd key %s holds %q: %s", e.Key, e.Value, e.Reason)
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// parseCursor turns a cursor key's kv (nil = absent) into a Cursor.
func parseCursor(key string, kv *mvccpb.KeyValue, fix string) (Cursor, error) {
	if kv == nil {
		return Cursor{}, nil
	}
	c := Cursor{Exists: true, Rev: kv.ModRevision, Raw: string(kv.Value)}
	v, err := strconv.ParseInt(c.Raw, 10, 64)
	if err != nil || v < Unknown {
		return c, &BadValueError{Key: key, Value: c.Raw, Reason: "not a decimal event id (-1 or more)", Fix: fix}
	}
	c.Value = v
	return c, nil
}

func formatCursor(v int64) string { return strconv.FormatInt(v, 10) }

func checkValue(v int64) error {
	if v < Unknown {
		return fmt.Errorf("cursor value %d: want an event id (0 or more) or -1 (unknown, full refresh)", v)
	}
	return nil
}

func (s *Store) masterFix(catalog string) string {
	return fmt.Sprintf(`set it with "hmssync cursor set --catalog %s --force N" (or "hmssync cursor reset --catalog %s --force" for a full refresh)`, catalog, catalog)
}

// get reads one key linearizably.
func (s *Store) get(ctx context.Context, key string) (*mvccpb.KeyValue, int64, error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Get(rctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s from etcd: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, resp.Header.Revision, nil
	}
	return resp.Kvs[0], resp.Header.Revision, nil
}

// MasterCursor reads the committed cursor of catalog with its epoch and
// metastore identity, in one linearizable read. A value that is not a decimal
// is a *BadValueError (the Cursor still carries Rev and Raw).
func (s *Store) MasterCursor(ctx context.Context, catalog string) (Cursor, error) {
	if err := s.check(catalogName(catalog)); err != nil {
		return Cursor{}, err
	}
	dir := s.keys.masterDir(catalog)
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Get(rctx, dir, clientv3.WithPrefix())
	if err != nil {
		return Cursor{}, fmt.Errorf("read %s* from etcd: %w", dir, err)
	}
	return s.parseMaster(catalog, resp.Kvs)
}

// parseMaster assembles a master cursor from the keys under its catalog's
// directory (any order; absent keys are simply not there).
func (s *Store) parseMaster(catalog string, kvs []*mvccpb.KeyValue) (Cursor, error) {
	var cursorKV, epochKV, uuidKV, txnsKV *mvccpb.KeyValue
	for _, kv := range kvs {
		switch string(kv.Key) {
		case s.keys.masterCursor(catalog):
			cursorKV = kv
		case s.keys.masterEpoch(catalog):
			epochKV = kv
		case s.keys.masterMetastore(catalog):
			uuidKV = kv
		case s.keys.masterTxns(catalog):
			txnsKV = kv
		}
	}
	c, err := parseCursor(s.keys.masterCursor(catalog), cursorKV, s.masterFix(catalog))
	if uuidKV != nil {
		c.Metastore, c.MetastoreRev = string(uuidKV.Value), uuidKV.ModRevision
	}
	if txnsKV != nil {
		c.Txns, c.TxnsRev = string(txnsKV.Value), txnsKV.ModRevision
	}
	e, eerr := parseEpoch(s.keys.masterEpoch(catalog), epochKV, s.epochFix(catalog))
	c.Epoch, c.EpochRev = e.value, e.rev
	if err == nil {
		err = eerr
	}
	return c, err
}

// SetMaster is the operator's override of the master cursor (`cursor set`, and
// `cursor reset` with -1): it is not fenced by the leader key, because the
// operator is not the master, but it is a compare-and-set, so the returned old
// value is exactly the one replaced. It also replaces a bad value. A running
// master sees the new revision through its watch and re-reads, or its next
// fenced commit fails with ErrConflict and it re-reads; it then adopts the value.
func (s *Store) SetMaster(ctx context.Context, catalog string, value int64) (old Cursor, err error) {
	return s.setMaster(ctx, catalog, value, false)
}

// SetMasterLed is SetMaster that writes only while some member campaigns for
// the master role (holds a key under the election prefix), checked in the same
// transaction; otherwise it writes nothing and returns ErrNoMaster. `cursor set`
// uses it: only a running master takes an operator's value up (a master that
// starts later continues from its own cursor), so a value written with no
// member running would look applied and do nothing. A campaigning member wins
// the role within moments, as the election's leader or its successor.
func (s *Store) SetMasterLed(ctx context.Context, catalog string, value int64) (old Cursor, err error) {
	return s.setMaster(ctx, catalog, value, true)
}

func (s *Store) setMaster(ctx context.Context, catalog string, value int64, led bool) (old Cursor, err error) {
	if err := s.check(catalogName(catalog)); err != nil {
		return Cursor{}, err
	}
	if err := checkValue(value); err != nil {
		return Cursor{}, err
	}
	key := s.keys.masterCursor(catalog)
	candidates := s.keys.election() + "/" // the election's candidate keys: <prefix>/<lease hex>
	const attempts = 5
	for range attempts {
		rctx, cancel := s.request(ctx)
		cur, err := s.cli.Get(rctx, s.keys.masterDir(catalog), clientv3.WithPrefix())
		cancel()
		if err != nil {
			return Cursor{}, fmt.Errorf("read %s from etcd: %w", key, err)
		}
		old, _ = s.parseMaster(catalog, cur.Kvs) // a bad old value is what the operator is fixing
		// The open-transaction state is as of the value replaced: deleted,
		// so that no member takes it for the state as of the new one.
		ops := []clientv3.Op{clientv3.OpPut(key, formatCursor(value)), clientv3.OpDelete(s.keys.masterTxns(catalog))}
		if epoch := operatorEpoch(old, value); epoch != old.Epoch || old.EpochRev == 0 {
			ops = append(ops, clientv3.OpPut(s.keys.masterEpoch(catalog), formatCursor(epoch)))
		}
		conds := []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(key), "=", old.Rev),
			clientv3.Compare(clientv3.ModRevision(s.keys.masterEpoch(catalog)), "=", old.EpochRev),
		}
		if led {
			// Over a range, etcd holds a comparison true only if every key
			// in it satisfies it, and false for an empty range.
			conds = append(conds, clientv3.Compare(clientv3.CreateRevision(candidates), ">", 0).WithPrefix())
		}
		rctx, cancel = s.request(ctx)
		var resp *clientv3.TxnResponse
		err = etcdcall.Write(rctx, func(rctx context.Context) (err error) {
			resp, err = s.cli.Txn(rctx).
				If(conds...).
				Then(ops...).
				Else(clientv3.OpGet(candidates, clientv3.WithPrefix(), clientv3.WithCountOnly())).
				Commit()
			return err
		})
		cancel()
		if err != nil {
			return old, fmt.Errorf("set %s to %d: %w: %w (read it again before retrying)", key, value, ErrOutcomeUnknown, err)
		}
		if resp.Succeeded {
			s.log.Warn("master cursor set by operator", zap.String("key", key), zap.Stringer("old", old), zap.Int64("new", value),
				zap.Int64("old_epoch", old.Epoch), zap.Int64("epoch", operatorEpoch(old, value)))
			return old, nil
		}
		if led && resp.Responses[0].GetResponseRange().Count == 0 {
			return old, fmt.Errorf("set %s to %d: %w (no key under %s): a master that starts later continues from its own cursor, "+
				"so the value would do nothing; start the sidecars, check `hmssync status` shows a master, then set it again "+
				"(`cursor reset` needs no running master)", key, value, ErrNoMaster, candidates)
		}
	}
	return Cursor{}, fmt.Errorf("set %s to %d: %w %d times in a row (is a master committing fast? pause it first)", key, value, ErrConflict, attempts)
}
