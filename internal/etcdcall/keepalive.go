package etcdcall

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// failedRenewalPause separates a failed renewal from the next attempt.
const failedRenewalPause = 100 * time.Millisecond

// KeepAlive refreshes lease id, just granted with ttl, every ttl/3 until ctx
// ends or the lease is lost, and returns a channel that is closed then. Each
// renewal is one KeepAliveOnce bounded by timeout and marked WithRequireLeader,
// so it opens its own stream, which the balancer may send to any member, and a
// member without a leader refuses it at once (the client then tries its next
// endpoint). A failed renewal is tried again after a short pause.
//
// The lease counts as lost when etcd says it is gone, or when the time since the
// send of the last renewal etcd answered exceeds the TTL that answer granted:
// by then etcd's leader has expired it (or is about to, give or take a leader
// change). Closing then is the signal to stop acting on the lease; safety must
// still come from fencing, as the close is a local estimate.
func KeepAlive(ctx context.Context, cli *clientv3.Client, id clientv3.LeaseID, ttl, timeout time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		expires := time.Now().Add(ttl)
		next := time.Now().Add(ttl / 3)
		for {
			wait := time.Until(next)
			if until := time.Until(expires); until < wait {
				wait = until
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if !time.Now().Before(expires) {
				return
			}
			sent := time.Now()
			rctx, cancel := context.WithDeadline(clientv3.WithRequireLeader(ctx), earliest(sent.Add(timeout), expires))
			resp, err := cli.KeepAliveOnce(rctx, id)
			cancel()
			switch {
			case ctx.Err() != nil:
				return
			case err == nil:
				granted := time.Duration(resp.TTL) * time.Second
				expires = sent.Add(granted)
				next = sent.Add(granted / 3)
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				return
			default:
				next = time.Now().Add(failedRenewalPause)
			}
		}
	}()
	return done
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
