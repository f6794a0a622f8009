// Package etcdcall shapes every request hmssync sends to etcd so that a member
// cut off from its cluster's quorum cannot hold it up.
//
// A member without a raft leader keeps accepting connections. Without
// clientv3.WithRequireLeader it holds a linearizable read, a write or a lease
// grant until the caller's deadline; with it, it answers "no leader"
// (rpctypes.ErrNoLeader) at once, before doing anything. The client retries
// reads and lease calls refused that way on its next endpoint by itself; it does
// not retry writes, so Write does, which is safe because a refused request was
// never applied. Any other failure of a write leaves its outcome unknown and is
// returned as it is.
//
// Lease keep-alives need more than the flag: clientv3's KeepAlive keeps one
// stream on one member, and a member that loses its leader ends that stream only
// after three election timeouts, longer than a short lease lives. KeepAlive here
// refreshes the lease with one request at a time, each free to go to another
// member, and a second one when the first has waited for the request timeout.
package etcdcall

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Request derives one request's context from ctx: bounded by timeout and
// marked WithRequireLeader.
func Request(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(clientv3.WithRequireLeader(ctx), timeout)
}

// NoLeader reports whether err is a member's refusal for want of a leader.
func NoLeader(err error) bool {
	return errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrGRPCNoLeader)
}

// retryPause separates attempts after the first retry, as clientv3 spaces its
// own retries of reads: long enough not to spin through a cluster-wide election,
// short enough that a healthy member is reached at once.
const retryPause = 25 * time.Millisecond

// Write runs the write do with ctx (a Request context) and runs it again while
// a member refuses it with "no leader", until ctx ends: the first retry at once,
// as the client's balancer sends it to its next endpoint, later ones after a
// short pause, so that an election of the whole cluster is waited out within
// the deadline rather than failed at once. It returns do's last error.
func Write(ctx context.Context, do func(ctx context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := do(ctx)
		if err == nil || !NoLeader(err) || ctx.Err() != nil {
			return err
		}
		if attempt == 0 {
			continue
		}
		t := time.NewTimer(retryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
