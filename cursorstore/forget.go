package cursorstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

// MemberAliveError is ForgetMember's refusal: the member still runs, or a
// process is starting as it.
type MemberAliveError struct {
	Member string
	// Why lists what shows the member alive: its holder key (with the process
	// it names), its status key, its keys in the election.
	Why []string
}

func (e *MemberAliveError) Error() string {
	return fmt.Sprintf("not forgetting member %s: it is alive (%s); stop its sidecar first: its lease-bound keys go within the lease TTL "+
		"(hmssync status shows it down), then run member forget again", e.Member, strings.Join(e.Why, "; "))
}

// ErrNoSuchMember is ForgetMember's answer when the cluster holds no key of the
// member.
var ErrNoSuchMember = errors.New("no such member")

// ForgetMember deletes every key of a decommissioned member: everything under
// members/<member>/ (its durable cursors and epochs, its status, its holder;
// keys.go lists them). It refuses with a *MemberAliveError while the member is
// alive: its holder or status key exists (both are bound to a live lease) or it
// has a key in the election. The check and the delete are one transaction,
// which fails if the member's keys or the election changed since they were
// read, so a sidecar starting as the member in the meantime is never stripped
// of its keys. It returns the keys it deleted, sorted.
func (s *Store) ForgetMember(ctx context.Context, member string) ([]string, error) {
	if err := s.check(memberName(member)); err != nil {
		return nil, err
	}
	dir := s.keys.root + "/members/" + member + "/"
	elect := s.keys.election() + "/"
	rctx, cancel := s.request(ctx)
	defer cancel()
	var resp *clientv3.TxnResponse
	// Read-only: safe to send again.
	err := etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		resp, err = s.cli.Txn(rctx).Then(clientv3.OpGet(dir, clientv3.WithPrefix()), clientv3.OpGet(elect, clientv3.WithPrefix())).Commit()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s and %s from etcd: %w", dir, elect, err)
	}
	rev := resp.Header.Revision
	own, cands := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
	alive := &MemberAliveError{Member: member}
	var keys []string
	for _, kv := range own {
		key := string(kv.Key)
		keys = append(keys, key)
		switch key {
		case s.keys.holder(member):
			var h MemberHolder
			if json.Unmarshal(kv.Value, &h) == nil && h.Address != "" {
				alive.Why = append(alive.Why, fmt.Sprintf("%s names the process at %s (pid %d), started %s", key, h.Address, h.PID, h.Started.UTC().Format(time.RFC3339)))
			} else {
				alive.Why = append(alive.Why, key+" exists")
			}
		case s.keys.status(member):
			alive.Why = append(alive.Why, key+" exists")
		}
	}
	for _, kv := range cands {
		if string(kv.Value) == member {
			alive.Why = append(alive.Why, "it campaigns in the election ("+string(kv.Key)+")")
		}
	}
	if len(alive.Why) > 0 {
		return nil, alive
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("forget member %s: %w: no key under %s (members: see hmssync status)", member, ErrNoSuchMember, dir)
	}
	// Nothing under the member's directory nor in the election was created or
	// changed since the read.
	var tresp *clientv3.TxnResponse
	err = etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		tresp, err = s.cli.Txn(rctx).If(
			clientv3.Compare(clientv3.ModRevision(dir).WithPrefix(), "<", rev+1),
			clientv3.Compare(clientv3.CreateRevision(elect).WithPrefix(), "<", rev+1),
		).Then(clientv3.OpDelete(dir, clientv3.WithPrefix())).Commit()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("delete %s from etcd: %w", dir, err)
	}
	if !tresp.Succeeded {
		return nil, fmt.Errorf("forget member %s: its keys or the election changed while it was checked (a sidecar starting as %s?); run member forget again", member, member)
	}
	slices.Sort(keys)
	return keys, nil
}
