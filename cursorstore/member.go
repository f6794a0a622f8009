package cursorstore

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

func (s *Store) memberFix(member string) string {
	return fmt.Sprintf("delete it (etcdctl del) to make member %s full-refresh, or put the right decimal event id", member)
}

// MemberCursor reads a member's own durable cursor for catalog (what it resumes
// from after a restart) with the epoch it belongs to (SPEC §2a; 0 when the
// member wrote none). A value that is not a decimal is a *BadValueError.
func (s *Store) MemberCursor(ctx context.Context, member, catalog string) (Cursor, error) {
	if err := s.check(memberName(member), catalogName(catalog)); err != nil {
		return Cursor{}, err
	}
	key, epochKey := s.keys.memberCursor(member, catalog), s.keys.memberEpoch(member, catalog)
	txnsKey := s.keys.memberTxns(member, catalog)
	rctx, cancel := s.request(ctx)
	defer cancel()
	// A read-only Txn: safe to send again wherever it failed.
	var resp *clientv3.TxnResponse
	err := etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		resp, err = s.cli.Txn(rctx).Then(clientv3.OpGet(key), clientv3.OpGet(epochKey), clientv3.OpGet(txnsKey)).Commit()
		return err
	})
	if err != nil {
		return Cursor{}, fmt.Errorf("read %s and %s from etcd: %w", key, epochKey, err)
	}
	first := func(i int) *mvccpb.KeyValue {
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
			return kvs[0]
		}
		return nil
	}
	c, err := parseCursor(key, first(0), s.memberFix(member))
	e, eerr := parseEpoch(epochKey, first(1), s.memberFix(member))
	c.Epoch, c.EpochRev = e.value, e.rev
	if kv := first(2); kv != nil {
		c.Txns, c.TxnsRev = string(kv.Value), kv.ModRevision
	}
	if err == nil {
		err = eerr
	}
	return c, err
}

// PutMemberCursor stores a member's own cursor and the epoch it belongs to, in
// one transaction. It is not bound to a lease: it must survive the member's
// restart.
func (s *Store) PutMemberCursor(ctx context.Context, member, catalog string, value, epoch int64) error {
	return s.PutMemberCursorTxns(ctx, member, catalog, value, epoch, "")
}

// PutMemberCursorTxns is PutMemberCursor that also writes the member's
// open-transaction state as of value (members/<m>/txns/<c>) in the same
// transaction, when txns is not "" ("" leaves the key as it is).
func (s *Store) PutMemberCursorTxns(ctx context.Context, member, catalog string, value, epoch int64, txns string) error {
	if err := s.check(memberName(member), catalogName(catalog)); err != nil {
		return err
	}
	key, epochKey := s.keys.memberCursor(member, catalog), s.keys.memberEpoch(member, catalog)
	if err := checkValue(value); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if epoch < 0 {
		return fmt.Errorf("put %s: epoch %d: want 0 or more", epochKey, epoch)
	}
	if len(txns) > MaxTxnsBytes {
		return fmt.Errorf("put %s: the open-transaction state is %d bytes, more than %d", key, len(txns), MaxTxnsBytes)
	}
	ops := []clientv3.Op{clientv3.OpPut(key, formatCursor(value)), clientv3.OpPut(epochKey, formatCursor(epoch))}
	if txns != "" {
		ops = append(ops, clientv3.OpPut(s.keys.memberTxns(member, catalog), txns))
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	err := etcdcall.Write(rctx, func(rctx context.Context) error {
		_, err := s.cli.Txn(rctx).Then(ops...).Commit()
		return err
	})
	if err != nil {
		return fmt.Errorf("put %s=%d (epoch %d): %w", key, value, epoch, err)
	}
	return nil
}

// MemberCursors reads all of a member's own cursors, by catalog. Bad values are
// returned as errors next to the good ones, so one bad key hides nothing else.
func (s *Store) MemberCursors(ctx context.Context, member string) (map[string]Cursor, []error, error) {
	if err := s.check(memberName(member)); err != nil {
		return nil, nil, err
	}
	prefix := s.keys.memberCursors(member)
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Get(rctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, nil, fmt.Errorf("read %s* from etcd: %w", prefix, err)
	}
	out := map[string]Cursor{}
	var bad []error
	for _, kv := range resp.Kvs {
		catalog := strings.TrimPrefix(string(kv.Key), prefix)
		c, err := parseCursor(string(kv.Key), kv, s.memberFix(member))
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out[catalog] = c
	}
	return out, bad, nil
}
