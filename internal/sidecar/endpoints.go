package sidecar

import (
	"context"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/redact"
)

// endpointCheckInterval is the pause between two checks of the etcd members.
const endpointCheckInterval = time.Second

// minEndpointCheckTimeout is the least time a member has to answer a check:
// each Status call opens a connection of its own, a few round trips, so over a
// long network path a short request timeout would leave out members that serve
// requests on the client's open connection in time.
const minEndpointCheckTimeout = 2 * time.Second

// keepToLeaderMembers keeps the client's endpoints to the configured members
// that answer a Status call within timeout (at least minEndpointCheckTimeout)
// and report a raft leader, checking
// every member once a second in the background until stop is called. When none
// qualifies, all are kept: nothing better is known, and the client's own
// handling of an etcd outage applies.
//
// Why: the client's balancer sends each request and each new stream to its next
// endpoint, leader or not. A member cut off from the others refuses requests
// marked WithRequireLeader at once (etcdcall), but a stream opened on it before
// it lost its leader (watches) stays there until the member ends it, three
// election timeouts later, and every third new request would be refused first.
// Leaving the member out of the list sends the requests and new streams
// elsewhere.
//
// A check is one Status call per member, all at once, each bounded by the
// check's timeout, so a check never takes longer than that and holds one
// goroutine per member.
func keepToLeaderMembers(cli *clientv3.Client, all []string, timeout time.Duration, log *zap.Logger) (stop func()) {
	if len(all) < 2 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		current := slices.Clone(all)
		t := time.NewTimer(endpointCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			want, why := membersWithLeader(ctx, cli, all, max(timeout, minEndpointCheckTimeout))
			if ctx.Err() != nil {
				return
			}
			if len(want) == 0 {
				want = all
			}
			if !slices.Equal(want, current) {
				if len(want) < len(all) {
					log.Warn("etcd members without a leader or not answering are left out of the client's endpoints",
						zap.Strings("endpoints", redact.URLs(want)), zap.Any("left_out", why))
				} else {
					log.Info("etcd client uses all configured endpoints again", zap.Strings("endpoints", redact.URLs(want)))
				}
				cli.SetEndpoints(want...)
				current = want
			}
			t.Reset(endpointCheckInterval)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// membersWithLeader returns the endpoints, in the order of all, whose member
// answers Status within timeout and reports a leader, and why each other one
// was left out.
func membersWithLeader(ctx context.Context, cli *clientv3.Client, all []string, timeout time.Duration) ([]string, map[string]string) {
	ok := make([]bool, len(all))
	reasons := make([]string, len(all))
	var wg sync.WaitGroup
	for i, ep := range all {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			st, err := cli.Status(sctx, ep)
			switch {
			case err != nil:
				reasons[i] = err.Error()
			case st.Leader == 0:
				reasons[i] = "no raft leader"
			default:
				ok[i] = true
			}
		})
	}
	wg.Wait()
	var want []string
	why := map[string]string{}
	for i, ep := range all {
		if ok[i] {
			want = append(want, ep)
		} else {
			why[redact.URL(ep)] = reasons[i]
		}
	}
	return want, why
}
