package cursorstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
	"github.com/hmssync/hmssync/internal/retry"
)

// MemberHolder is the value of members/<member>/holder: which process runs as
// that member. The key is bound to the process's own lease, so it disappears
// within the lease TTL after the process dies.
type MemberHolder struct {
	Address string    `json:"address"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// MemberHeldError is HoldMember's answer when another live process holds the
// member name.
type MemberHeldError struct {
	Member string
	Key    string
	Holder MemberHolder
	// Raw is the key's value when it is not a MemberHolder's JSON.
	Raw string
}

func (e *MemberHeldError) Error() string {
	if e.Raw != "" {
		return fmt.Sprintf("member %s is already run by another live process (%s holds %q); give this sidecar another member name or stop the other one", e.Member, e.Key, e.Raw)
	}
	return fmt.Sprintf("member %s is already run by another live process: %s (pid %d), started %s (%s); give this sidecar another member name or stop the other one",
		e.Member, e.Holder.Address, e.Holder.PID, e.Holder.Started.UTC().Format(time.RFC3339), e.Key)
}

// MemberHold is a member name held by this process; Release gives it up.
type MemberHold struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Release stops refreshing the hold and deletes the key at once (its lease is
// revoked). It is safe to call more than once.
func (h *MemberHold) Release() {
	h.cancel()
	<-h.done
}

// HoldMember takes members/<member>/holder for this process: in one
// transaction, it writes h bound to a new lease of ttl if the key does not
// exist. While another live process holds it, it returns a *MemberHeldError
// naming that process. Once taken, the lease is kept alive until Release; when
// it is lost (etcd unreachable for longer than ttl) the hold is taken again
// with a new lease, and an error is logged while another process holds it.
func (s *Store) HoldMember(ctx context.Context, member string, h MemberHolder, ttl time.Duration) (*MemberHold, error) {
	if err := s.check(memberName(member)); err != nil {
		return nil, err
	}
	if ttl < time.Second || ttl%time.Second != 0 {
		return nil, fmt.Errorf("holder lease TTL %s: want whole seconds, at least 1s", ttl)
	}
	val, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode holder of %s: %w", member, err)
	}
	key := s.keys.holder(member)
	lease, err := s.takeHolder(ctx, member, key, string(val), ttl)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithCancel(context.Background())
	hold := &MemberHold{cancel: cancel, done: make(chan struct{})}
	go s.keepHolder(hctx, hold.done, member, key, string(val), ttl, lease)
	return hold, nil
}

// takeHolder grants a lease and puts key bound to it unless the key exists.
func (s *Store) takeHolder(ctx context.Context, member, key, val string, ttl time.Duration) (clientv3.LeaseID, error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	lease, err := s.cli.Grant(rctx, int64(ttl/time.Second))
	if err != nil {
		return 0, fmt.Errorf("grant the lease of %s: %w", key, err)
	}
	// The transaction only creates: sending it again after an unknown outcome
	// at worst finds the key this process just wrote, told apart by its lease.
	var resp *clientv3.TxnResponse
	err = etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		resp, err = s.cli.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, val, clientv3.WithLease(lease.ID))).
			Else(clientv3.OpGet(key)).Commit()
		return err
	})
	if err != nil {
		s.revokeLease(lease.ID)
		return 0, fmt.Errorf("take %s: %w", key, err)
	}
	if resp.Succeeded {
		return lease.ID, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) > 0 && clientv3.LeaseID(kvs[0].Lease) == lease.ID {
		return lease.ID, nil
	}
	s.revokeLease(lease.ID)
	held := &MemberHeldError{Member: member, Key: key}
	if len(kvs) > 0 {
		if err := json.Unmarshal(kvs[0].Value, &held.Holder); err != nil {
			held.Raw = string(kvs[0].Value)
		}
	}
	return 0, held
}

func (s *Store) keepHolder(ctx context.Context, done chan<- struct{}, member, key, val string, ttl time.Duration, lease clientv3.LeaseID) {
	defer close(done)
	log := s.log.With(zap.String("key", key))
	delay := retry.NewDelay(100*time.Millisecond, ttl)
	for {
		lost := etcdcall.KeepAlive(ctx, s.cli, lease, ttl, s.timeout)
		<-lost
		s.revokeLease(lease)
		if ctx.Err() != nil {
			return
		}
		log.Warn("member holder lease lost; taking the member name again with a new lease")
		for {
			delay.Wait(ctx)
			if ctx.Err() != nil {
				return
			}
			var err error
			lease, err = s.takeHolder(ctx, member, key, val, ttl)
			if err == nil {
				delay.Reset()
				break
			}
			if held := (*MemberHeldError)(nil); errors.As(err, &held) {
				log.Error("another process took this member name while etcd was unreachable; stop one of the two", zap.Error(err))
			} else {
				log.Warn("cannot take the member name again; retrying", zap.Error(err))
			}
		}
	}
}

func (s *Store) revokeLease(id clientv3.LeaseID) {
	ctx, cancel := s.request(context.Background())
	defer cancel()
	if _, err := s.cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		s.log.Debug("revoke lease", zap.Error(err))
	}
}
