package cursorstore

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func (s *Store) memberFix(member string) string {
	return fmt.Sprintf("delete it (etcdctl del) to make member %s full-refresh, or put the right decimal event id", member)
}

// MemberCursor reads a member's own durable cursor for catalog (what it resumes
// from after a restart). A value that is not a decimal is a *BadValueError.
func (s *Store) MemberCursor(ctx context.Context, member, catalog string) (Cursor, error) {
	if err := s.check(memberName(member), catalogName(catalog)); err != nil {
		return Cursor{}, err
	}
	key := s.keys.memberCursor(member, catalog)
	kv, _, err := s.get(ctx, key)
	if err != nil {
		return Cursor{}, err
	}
	return parseCursor(key, kv, s.memberFix(member))
}

// PutMemberCursor stores a member's own cursor. It is not bound to a lease: it
// must survive the member's restart.
func (s *Store) PutMemberCursor(ctx context.Context, member, catalog string, value int64) error {
	if err := s.check(memberName(member), catalogName(catalog)); err != nil {
		return err
	}
	key := s.keys.memberCursor(member, catalog)
	if err := checkValue(value); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	if _, err := s.cli.Put(rctx, key, formatCursor(value)); err != nil {
		return fmt.Errorf("put %s=%d: %w", key, value, err)
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
