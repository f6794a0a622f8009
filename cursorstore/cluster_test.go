package cursorstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/tests/v3/framework/integration"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/cursorstore"
)

// The watch of a follower connected to one member of a 3-node cluster survives
// that member's restart and the compaction of the history it would resume from:
// it re-reads and delivers the newest cursor, then keeps following.
func TestWatchMasterSurvivesMemberRestartAndCompaction(t *testing.T) {
	integration.BeforeTest(t)
	clus := integration.NewCluster(t, &integration.ClusterConfig{Size: 3, UseTCP: true})
	defer clus.Terminate(t)

	// The follower talks to one member only, so losing it breaks the watch. It
	// is not the raft leader, so the writes meanwhile need no new election.
	lead := clus.WaitLeader(t)
	lost, other := (lead+1)%3, (lead+2)%3
	fcli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{clus.Members[lost].GRPCURL},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fcli.Close()
	follower := cursorstore.New(fcli, "/hmssync", cluster, 2*time.Second, zaptest.NewLogger(t).Named("follower"))
	writer := clus.Client(other)
	key := follower.MasterCursorKey("hive")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := follower.WatchMaster(ctx, "hive").C
	if c := next(t, ch, 10*time.Second); c.Exists {
		t.Fatalf("first value %+v; want absent", c)
	}
	put := func(v int) int64 {
		t.Helper()
		pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer pcancel()
		resp, err := writer.Put(pctx, key, strconv.Itoa(v))
		if err != nil {
			t.Fatalf("put %d: %v", v, err)
		}
		return resp.Header.Revision
	}
	rev := put(1)
	if c := next(t, ch, 10*time.Second); c.Value != 1 || c.Rev != rev {
		t.Fatalf("got %+v; want 1@%d", c, rev)
	}

	// The follower's member goes away; the cursor moves on and the history is
	// compacted while the follower cannot resume.
	clus.Members[lost].Stop(t)
	for v := 2; v <= 5; v++ {
		rev = put(v)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	if _, err := writer.Compact(cctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compact at %d: %v", rev, err)
	}
	ccancel()
	restartsBefore := follower.WatchRestarts()
	if err := clus.Members[lost].Restart(t); err != nil {
		t.Fatalf("restart member %d: %v", lost, err)
	}
	clus.WaitMembersForLeader(t, clus.Members)

	// The newest value arrives (intermediate ones may be skipped).
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := next(t, ch, time.Until(deadline))
		if c.Value > 5 || c.Value < 1 {
			t.Fatalf("unexpected cursor %+v", c)
		}
		if c.Value == 5 {
			if c.Rev != rev {
				t.Fatalf("got 5@%d; want revision %d", c.Rev, rev)
			}
			break
		}
	}
	// Whether the resumed watch met the compaction depends on how far the
	// restarted member had replayed the leader's log when the client reconnected;
	// either way the newest value must arrive. TestWatchRecoversFromCompaction
	// exercises the ErrCompacted path deterministically.
	t.Logf("watch restarts during the member restart: %d", follower.WatchRestarts()-restartsBefore)
	// And it keeps following.
	rev = put(6)
	if c := next(t, ch, 10*time.Second); c.Value != 6 || c.Rev != rev {
		t.Fatalf("after recovery got %+v; want 6@%d", c, rev)
	}
}
