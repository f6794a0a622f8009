package cursorstore_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// runPublisher runs p until the returned stop is called (or the test ends).
func runPublisher(t *testing.T, p *cursorstore.StatusPublisher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil {
			t.Errorf("publisher: %v", err)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// statusKV reads a status key: its decoded JSON and its lease.
func statusKV(t *testing.T, cli *clientv3.Client, key string) (cursorstore.MemberStatus, clientv3.LeaseID, bool) {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return cursorstore.MemberStatus{}, 0, false
	}
	var st cursorstore.MemberStatus
	if err := json.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
		t.Fatalf("%s holds %q: %v", key, resp.Kvs[0].Value, err)
	}
	return st, clientv3.LeaseID(resp.Kvs[0].Lease), true
}

func TestStatusPublisherBindsToALeaseAndRepublishesWhenItIsLost(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	key := s.StatusKey("fe-a")
	p, err := s.NewStatusPublisher("fe-a", 10*time.Second, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	stop := runPublisher(t, p)
	before := time.Now().UTC().Add(-time.Second)
	p.Update(cursorstore.MemberStatus{Role: cursorstore.RoleFollower, FEURL: "http://127.0.0.1:8030", Version: "v1",
		Catalogs: map[string]cursorstore.CatalogProgress{"hive": {Cursor: 90, Lag: 10}}})

	var lease clientv3.LeaseID
	eventually(t, 10*time.Second, "status published", func() bool {
		st, l, ok := statusKV(t, srv.Client, key)
		lease = l
		return ok && st.Role == cursorstore.RoleFollower
	})
	st, _, _ := statusKV(t, srv.Client, key)
	if st.Member != "fe-a" || st.FEURL != "http://127.0.0.1:8030" || st.Catalogs["hive"].Cursor != 90 || st.Time.Before(before) {
		t.Fatalf("published %+v", st)
	}
	if lease == clientv3.NoLease {
		t.Fatal("status is not bound to a lease")
	}

	// Updates are published.
	p.Update(cursorstore.MemberStatus{Role: cursorstore.RoleMaster, Catalogs: map[string]cursorstore.CatalogProgress{"hive": {Cursor: 100}}})
	eventually(t, 10*time.Second, "update published", func() bool {
		st, _, _ := statusKV(t, srv.Client, key)
		return st.Role == cursorstore.RoleMaster && st.Catalogs["hive"].Cursor == 100
	})

	// The lease is lost (revoked behind its back): the status comes back on a
	// new lease, without any Update.
	if _, err := srv.Client.Revoke(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "status republished on a new lease", func() bool {
		st, l, ok := statusKV(t, srv.Client, key)
		return ok && l != lease && l != clientv3.NoLease && st.Role == cursorstore.RoleMaster
	})

	// Leaving deletes the status at once (the lease is revoked).
	stop()
	if _, _, ok := statusKV(t, srv.Client, key); ok {
		t.Fatal("status still present after the publisher stopped")
	}
}

func TestStatusesShowsMasterMembersCursorsLagAndProblems(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	cli := srv.Client
	put := func(k, v string, opts ...clientv3.OpOption) {
		t.Helper()
		if _, err := cli.Put(ctx, k, v, opts...); err != nil {
			t.Fatal(err)
		}
	}
	root := "/hmssync/test"
	// Election: fe-b entered first, so it is master although fe-a's key sorts first.
	lease, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	put(root+"/election/2", "fe-b", clientv3.WithLease(lease.ID))
	put(root+"/election/1", "fe-a", clientv3.WithLease(lease.ID))
	put(root+"/catalogs/hive/cursor", "100")
	put(root+"/catalogs/iceberg/cursor", "abc")
	put(root+"/members/fe-b/cursors/hive", "70")
	put(root+"/members/fe-c/cursors/hive", "-1")
	put(root+"/pause", "HMS upgrade")
	put(root+"/other/key", "ignored")

	p, err := s.NewStatusPublisher("fe-a", 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	runPublisher(t, p)
	p.Update(cursorstore.MemberStatus{Role: cursorstore.RoleFollower, FEURL: "http://fe-a:8030", Version: "v1",
		Catalogs: map[string]cursorstore.CatalogProgress{"hive": {Cursor: 90, LastError: "FE timeout"}}})
	eventually(t, 10*time.Second, "fe-a's status", func() bool { _, _, ok := statusKV(t, cli, s.StatusKey("fe-a")); return ok })

	cs, err := s.Statuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Master != "fe-b" || !slices.Equal(cs.Candidates, []string{"fe-b", "fe-a"}) {
		t.Fatalf("master %q candidates %v; want fe-b first", cs.Master, cs.Candidates)
	}
	if !cs.Paused || cs.PauseReason != "HMS upgrade" {
		t.Fatalf("pause %v %q", cs.Paused, cs.PauseReason)
	}
	if len(cs.MasterCursors) != 1 || cs.MasterCursors["hive"] != 100 {
		t.Fatalf("master cursors %v; want hive=100 only", cs.MasterCursors)
	}
	if len(cs.Problems) != 1 || !strings.Contains(cs.Problems[0], root+"/catalogs/iceberg/cursor") || !strings.Contains(cs.Problems[0], `"abc"`) {
		t.Fatalf("problems %q; want the iceberg cursor named with its value", cs.Problems)
	}
	names := []string{}
	for _, m := range cs.Members {
		names = append(names, m.Member)
	}
	if !slices.Equal(names, []string{"fe-a", "fe-b", "fe-c"}) {
		t.Fatalf("members %v", names)
	}
	a, b, c := cs.Members[0], cs.Members[1], cs.Members[2]
	// fe-a: live, from its status; lag 100-90.
	if !a.Live || a.Role != cursorstore.RoleFollower || a.FEURL != "http://fe-a:8030" || a.LeaseTTL <= 0 || a.LeaseTTL > 10 {
		t.Fatalf("fe-a: %+v", a)
	}
	if h := a.Catalogs["hive"]; h.Cursor == nil || *h.Cursor != 90 || h.Lag == nil || *h.Lag != 10 || h.LastError != "FE timeout" || h.StoredCursor != nil {
		t.Fatalf("fe-a hive: %+v", h)
	}
	// fe-b: a candidate without status; its stored cursor, lag 100-70.
	if b.Live || b.LeaseTTL != -1 || !strings.Contains(b.Role, "candidate") {
		t.Fatalf("fe-b: %+v", b)
	}
	if h := b.Catalogs["hive"]; h.Cursor == nil || *h.Cursor != 70 || h.Lag == nil || *h.Lag != 30 {
		t.Fatalf("fe-b hive: %+v", h)
	}
	// fe-c: down, cursor unknown (-1): no lag.
	if c.Live || c.Role != "down" {
		t.Fatalf("fe-c: %+v", c)
	}
	if h := c.Catalogs["hive"]; h.Cursor == nil || *h.Cursor != -1 || h.Lag != nil {
		t.Fatalf("fe-c hive: %+v", h)
	}
}

// Right after a failover the members' status keys still say what they were:
// the roles come from the election the header's master comes from, and the
// master's lag is the one its own status reports (behind the metastore), not
// the master cursor key minus the cursor it published a moment ago.
func TestStatusesTakesRolesFromTheElectionAndTheMastersOwnLag(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	cli := srv.Client
	put := func(k, v string, opts ...clientv3.OpOption) {
		t.Helper()
		if _, err := cli.Put(ctx, k, v, opts...); err != nil {
			t.Fatal(err)
		}
	}
	status := func(st cursorstore.MemberStatus) string {
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	root := "/hmssync/test"
	lease, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	put(root+"/election/1", "fe-b", clientv3.WithLease(lease.ID))
	put(root+"/catalogs/hive/cursor", "120")
	// fe-a was master and has not published since it lost the role; fe-b won
	// and has not yet published as master.
	put(root+"/members/fe-a/status", status(cursorstore.MemberStatus{Member: "fe-a", Role: cursorstore.RoleMaster,
		Catalogs: map[string]cursorstore.CatalogProgress{"hive": {Cursor: 110, Lag: 0}}}))
	put(root+"/members/fe-b/status", status(cursorstore.MemberStatus{Member: "fe-b", Role: cursorstore.RoleFollower,
		Catalogs: map[string]cursorstore.CatalogProgress{"hive": {Cursor: 117, Lag: 2}}}))

	cs, err := s.Statuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Master != "fe-b" || len(cs.Members) != 2 {
		t.Fatalf("master %q members %+v; want fe-b and two members", cs.Master, cs.Members)
	}
	a, b := cs.Members[0], cs.Members[1]
	if b.Role != cursorstore.RoleMaster || a.Role != cursorstore.RoleFollower {
		t.Errorf("roles fe-a %q fe-b %q with fe-b the election's leader; want follower and master", a.Role, b.Role)
	}
	if h := b.Catalogs["hive"]; h.Lag == nil || *h.Lag != 2 {
		t.Errorf("the master's lag %v; want 2, the lag its status reports", optLag(h.Lag))
	}
	if h := a.Catalogs["hive"]; h.Lag == nil || *h.Lag != 10 {
		t.Errorf("fe-a's lag %v; want 120-110 = 10", optLag(h.Lag))
	}
}

func optLag(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}
