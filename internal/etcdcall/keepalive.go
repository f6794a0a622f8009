package etcdcall

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// failedRenewalPause separates a failed renewal from the next attempt.
const failedRenewalPause = 100 * time.Millisecond

// maxRenewalsInFlight bounds the renewals of one lease outstanding at once.
const maxRenewalsInFlight = 2

// renewal is the answer to one KeepAliveOnce sent at sent.
type renewal struct {
	sent    time.Time
	granted time.Duration
	err     error
}

// KeepAlive refreshes lease id, just granted with ttl, every ttl/3 until ctx
// ends or the lease is lost, and returns a channel that is closed then. Each
// renewal is one KeepAliveOnce marked WithRequireLeader, so it opens its own
// stream, which the balancer may send to any member, and a member without a
// leader refuses it at once (the client then tries its next endpoint). A failed
// renewal is tried again after a short pause.
//
// A renewal may take until the lease's local expiry: one that is slow but
// answered in time still renews the lease, which etcd has kept alive all the
// while (giving it up would make its holder resign for nothing). So that a
// member that does not answer at all cannot hold the renewals, another renewal
// is sent once one has been waiting for timeout (at most maxRenewalsInFlight
// at once), free to go to another member.
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
		rctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		// Never blocks: at most maxRenewalsInFlight answers are outstanding.
		answers := make(chan renewal, maxRenewalsInFlight)
		inFlight := 0
		expires := time.Now().Add(ttl)
		next := time.Now().Add(ttl / 3)
		for {
			t := time.NewTimer(min(time.Until(next), time.Until(expires)))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case a := <-answers:
				t.Stop()
				inFlight--
				switch {
				case ctx.Err() != nil, errors.Is(a.err, rpctypes.ErrLeaseNotFound):
					return
				case a.err == nil:
					if renewed := a.sent.Add(a.granted); renewed.After(expires) {
						expires, next = renewed, a.sent.Add(a.granted/3)
					}
				case inFlight == 0:
					next = earliest(next, time.Now().Add(failedRenewalPause))
				}
				continue
			case <-t.C:
			}
			now := time.Now()
			if !now.Before(expires) {
				return
			}
			if now.Before(next) {
				continue
			}
			next = now.Add(timeout)
			if inFlight == maxRenewalsInFlight {
				continue
			}
			inFlight++
			deadline := expires
			wg.Go(func() {
				actx, acancel := context.WithDeadline(rctx, deadline)
				defer acancel()
				resp, err := cli.KeepAliveOnce(actx, id)
				a := renewal{sent: now, err: err}
				if err == nil {
					a.granted = time.Duration(resp.TTL) * time.Second
				}
				answers <- a
			})
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
