package cursorstore

import (
	"context"
	"maps"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/zap"
)

// MemberProgress is one member's progress in one catalog as etcd holds it: its
// durable cursor with the epoch it belongs to, and whether the member is live
// (its status key, bound to its lease, exists).
type MemberProgress struct {
	Live bool
	// HasCursor is false when the member wrote no durable cursor for the
	// catalog; Value is then meaningless.
	HasCursor bool
	Value     int64
	// Epoch is the lineage Value belongs to (0 when the member wrote none).
	Epoch int64
}

// WatchMembers follows every member's progress in catalog (members/<m>/cursors/
// <catalog>, members/<m>/epochs/<catalog> and members/<m>/status, one watch over
// members/, so that a cursor and the epoch written in one transaction arrive as
// one value), by member name: the current state first, then each change, until
// ctx ends, when the channel is closed. Members with neither a status key nor a
// durable cursor for the catalog are absent. A slow reader receives the newest
// state. A value that is not a decimal is logged and leaves that member without
// a cursor (never ahead of what it applied). Like WatchMaster it survives
// reconnects and compaction; Fresh says whether it hears from etcd.
//
// It costs a range read and a watch for as long as ctx lasts, and the status
// keys' periodic rewrites arrive on it: open it only while it is needed.
func (s *Store) WatchMembers(ctx context.Context, catalog string) Watch[map[string]MemberProgress] {
	dir := s.keys.root + "/members/"
	fresh := newFreshness(dir, s.freshBound)
	out := make(chan map[string]MemberProgress)
	if err := s.check(catalogName(catalog)); err != nil {
		s.log.Error("cannot watch the members' cursors", zap.Error(err))
		fresh.failed(err)
		close(out)
		return Watch[map[string]MemberProgress]{C: out, fresh: fresh}
	}
	box := newLatest[map[string]MemberProgress]()
	state := map[string]*mvccpb.KeyValue{}
	var last map[string]MemberProgress
	var wg sync.WaitGroup
	wg.Go(func() {
		s.watchKey(ctx, dir, true, fresh, func(reset bool, changes []kvChange) {
			if reset {
				clear(state)
			}
			for _, ch := range changes {
				if kind, _, cat := s.keys.parseKey(ch.key); kind != kindStatus && cat != catalog {
					continue
				}
				if ch.kv == nil {
					delete(state, ch.key)
				} else {
					state[ch.key] = ch.kv
				}
			}
			now := s.membersProgress(catalog, state)
			if last != nil && maps.Equal(now, last) {
				return // a status rewrite, or the same state read again
			}
			last = now
			box.set(now)
		})
	})
	go func() {
		box.forward(ctx, out)
		wg.Wait()
		close(out)
	}()
	return Watch[map[string]MemberProgress]{C: out, fresh: fresh}
}

// membersProgress builds each member's progress in catalog from the keys held.
func (s *Store) membersProgress(catalog string, state map[string]*mvccpb.KeyValue) map[string]MemberProgress {
	out := map[string]MemberProgress{}
	for key, kv := range state {
		kind, member, cat := s.keys.parseKey(key)
		p := out[member]
		switch {
		case kind == kindStatus:
			p.Live = true
		case kind == kindMemberCursor && cat == catalog:
			c, err := parseCursor(key, kv, s.memberFix(member))
			if err != nil {
				s.log.Warn("a member's durable cursor is unreadable", zap.Error(err))
				continue
			}
			p.HasCursor, p.Value = true, c.Value
		case kind == kindMemberEpoch && cat == catalog:
			e, err := parseEpoch(key, kv, s.memberFix(member))
			if err != nil {
				// No lineage matches -1: the member counts as not caught up
				// until the key is fixed.
				s.log.Warn("a member's durable epoch is unreadable", zap.Error(err))
				e.value = -1
			}
			p.Epoch = e.value
		default:
			continue
		}
		out[member] = p
	}
	return out
}
