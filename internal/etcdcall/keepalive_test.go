package etcdcall_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
	"github.com/hmssync/hmssync/internal/testutil/etcdpartition"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// A renewal that outlasts the request timeout but is answered long before the
// lease runs out still renews it: the lease is alive in etcd, so giving it up
// would make its holder resign for nothing. With a 2 s lease, a 300 ms request
// timeout and 500 ms round trips, the lease must stay held for three TTLs.
func TestKeepAliveKeepsALeaseWhoseRenewalsOutlastTheRequestTimeout(t *testing.T) {
	// Registered first, so it runs after the server is closed.
	t.Cleanup(func() {
		goleak.VerifyNone(t, goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
			goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
	})
	srv := etcdtest.New(t)
	slow := etcdpartition.NewLatency(t, srv.Endpoints()[0])
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{slow.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	const ttl, timeout, rtt = 2 * time.Second, 300 * time.Millisecond, 500 * time.Millisecond
	gctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	lease, err := cli.Grant(gctx, int64(ttl/time.Second))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	slow.SetRoundTrip(rtt)
	ctx, stop := context.WithCancel(context.Background())
	lost := etcdcall.KeepAlive(ctx, cli, lease.ID, ttl, timeout)
	held := time.NewTimer(3 * ttl)
	defer held.Stop()
	select {
	case <-lost:
		t.Errorf("lease lost with %s round trips (request timeout %s, TTL %s); want it kept", rtt, timeout, ttl)
	case <-held.C:
	}
	stop()
	<-lost

	// etcd agrees: the lease is alive.
	slow.SetRoundTrip(0)
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ttlResp, err := srv.Client.TimeToLive(rctx, lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ttlResp.TTL <= 0 {
		t.Errorf("etcd holds the lease with TTL %d; want it alive", ttlResp.TTL)
	}
}
