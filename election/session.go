package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// openSession grants a lease with a deadline and keeps it alive. It does not use
// concurrency.NewSession's own grant, which has no deadline and would hang while
// etcd is unreachable. The keepalive stops when ctx ends; ctx must not carry a
// deadline of its own, or the lease would silently stop being refreshed.
func (e *Elector) openSession(ctx context.Context) (*concurrency.Session, error) {
	ttl := int64(e.cfg.LeaseTTL / time.Second)
	gctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	lease, err := e.cfg.Client.Grant(gctx, ttl)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("grant a %ds lease for candidate %q: %w", ttl, e.cfg.Name, err)
	}
	sess, err := concurrency.NewSession(e.cfg.Client,
		concurrency.WithLease(lease.ID),
		concurrency.WithTTL(int(ttl)),
		concurrency.WithContext(ctx))
	if err != nil {
		_ = e.revoke(lease.ID)
		return nil, fmt.Errorf("keep lease %x of candidate %q alive: %w", lease.ID, e.cfg.Name, err)
	}
	return sess, nil
}

// closeSession stops refreshing the session's lease and revokes it, which deletes
// the candidate key at once, so a successor does not wait for the TTL.
func (e *Elector) closeSession(sess *concurrency.Session) error {
	sess.Orphan()
	return e.revoke(sess.Lease())
}

// revoke is bounded by the request timeout and independent of any caller's
// context, because it runs on the way out (shutdown, resign): if etcd is
// unreachable the lease simply expires within its TTL.
func (e *Elector) revoke(id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.RequestTimeout)
	defer cancel()
	_, err := e.cfg.Client.Revoke(ctx, id)
	if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil
	}
	return fmt.Errorf("revoke lease %x of candidate %q (it expires by itself within %s): %w",
		id, e.cfg.Name, e.cfg.LeaseTTL, err)
}
