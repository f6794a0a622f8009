package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

// session is one candidacy's lease and its keep-alive. It takes the place of
// concurrency.Session, whose grant has no deadline and whose keep-alive stream
// stays on one etcd member: a member that loses its leader ends that stream only
// after three election timeouts, longer than a short lease lives, while the
// members that do have a leader could have refreshed it all along.
type session struct {
	lease clientv3.LeaseID
	done  <-chan struct{}
	stop  context.CancelFunc
}

// Lease is the session's lease, bound to the candidate key.
func (s *session) Lease() clientv3.LeaseID { return s.lease }

// Done is closed when the lease is lost (etcd says it is gone, or no renewal
// was answered within its TTL) or the session was orphaned.
func (s *session) Done() <-chan struct{} { return s.done }

// orphan stops refreshing the lease and waits until the keep-alive has ended.
func (s *session) orphan() {
	s.stop()
	<-s.done
}

// openSession grants a lease with a deadline and keeps it alive with one
// bounded renewal at a time (etcdcall.KeepAlive) until ctx ends or the session
// is closed.
func (e *Elector) openSession(ctx context.Context) (*session, error) {
	ttl := int64(e.cfg.LeaseTTL / time.Second)
	gctx, cancel := etcdcall.Request(ctx, e.cfg.RequestTimeout)
	lease, err := e.cfg.Client.Grant(gctx, ttl)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("grant a %ds lease for candidate %q: %w", ttl, e.cfg.Name, err)
	}
	kctx, stop := context.WithCancel(ctx)
	return &session{
		lease: lease.ID,
		done:  etcdcall.KeepAlive(kctx, e.cfg.Client, lease.ID, time.Duration(lease.TTL)*time.Second, e.cfg.RequestTimeout),
		stop:  stop,
	}, nil
}

// closeSession stops refreshing the session's lease and revokes it, which deletes
// the candidate key at once, so a successor does not wait for the TTL.
func (e *Elector) closeSession(sess *session) error {
	sess.orphan()
	return e.revoke(sess.Lease())
}

// revoke is bounded by the request timeout and independent of any caller's
// context, because it runs on the way out (shutdown, resign): if etcd is
// unreachable the lease simply expires within its TTL.
func (e *Elector) revoke(id clientv3.LeaseID) error {
	ctx, cancel := etcdcall.Request(context.Background(), e.cfg.RequestTimeout)
	defer cancel()
	_, err := e.cfg.Client.Revoke(ctx, id)
	if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil
	}
	return fmt.Errorf("revoke lease %x of candidate %q (it expires by itself within %s): %w",
		id, e.cfg.Name, e.cfg.LeaseTTL, err)
}
