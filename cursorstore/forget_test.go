package cursorstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// keysUnder lists the keys under prefix, as etcd holds them.
func keysUnder(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// ForgetMember removes every key of a member that is down, and only its keys;
// while the member holds its name, publishes a status or campaigns, it is
// refused with what shows it alive, and nothing is deleted.
func TestForgetMemberDeletesADownMembersKeysOnly(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	for _, m := range []string{"fe-a", "fe-ab"} {
		if err := s.PutMemberCursor(ctx, m, "hive", 40, 2); err != nil {
			t.Fatal(err)
		}
		if err := s.PutMemberCursor(ctx, m, "ice", 7, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetMaster(ctx, "hive", 41); err != nil {
		t.Fatal(err)
	}
	root := "/hmssync/" + cluster

	// Alive through its holder key: refused, naming the process.
	started := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	hold, err := s.HoldMember(ctx, "fe-a", cursorstore.MemberHolder{Address: "host-a:9108", PID: 7, Started: started}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.ForgetMember(ctx, "fe-a")
	var alive *cursorstore.MemberAliveError
	if !errors.As(err, &alive) || !strings.Contains(err.Error(), "host-a:9108") || !strings.Contains(err.Error(), "2026-12-04T20:00:00Z") ||
		!strings.Contains(err.Error(), "stop its sidecar first") {
		t.Fatalf("ForgetMember of a member holding its name: %v; want a *MemberAliveError naming host-a:9108, its start and the fix", err)
	}
	hold.Release()

	// Alive through a key in the election.
	leaderToken(t, srv.Client, s, "fe-a")
	if _, err := s.ForgetMember(ctx, "fe-a"); !errors.As(err, &alive) || !strings.Contains(err.Error(), "election") {
		t.Fatalf("ForgetMember of a campaigning member: %v; want a *MemberAliveError naming the election", err)
	}
	if got := keysUnder(t, srv.Client, root+"/members/fe-a/"); len(got) != 4 {
		t.Fatalf("refused ForgetMember left %q under fe-a; want its 4 keys untouched", got)
	}
	if _, err := srv.Client.Delete(ctx, s.ElectionPrefix()+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}

	// Alive through its status key (bound to a lease).
	lease, err := srv.Client.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.Put(ctx, s.StatusKey("fe-a"), `{"member":"fe-a","role":"follower"}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForgetMember(ctx, "fe-a"); !errors.As(err, &alive) || !strings.Contains(err.Error(), s.StatusKey("fe-a")) {
		t.Fatalf("ForgetMember of a member with a status: %v; want a *MemberAliveError naming its status key", err)
	}
	if _, err := srv.Client.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}

	// Down: its four keys go; fe-ab (whose name fe-a prefixes) and the
	// master cursor stay.
	got, err := s.ForgetMember(ctx, "fe-a")
	want := []string{root + "/members/fe-a/cursors/hive", root + "/members/fe-a/cursors/ice", root + "/members/fe-a/epochs/hive", root + "/members/fe-a/epochs/ice"}
	if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ForgetMember of a down member: %q, %v; want %q", got, err, want)
	}
	if left := keysUnder(t, srv.Client, root+"/members/fe-a/"); len(left) != 0 {
		t.Errorf("keys of fe-a left after ForgetMember: %q", left)
	}
	if left := keysUnder(t, srv.Client, root+"/members/fe-ab/"); len(left) != 4 {
		t.Errorf("fe-ab after forgetting fe-a: %q; want its 4 keys", left)
	}
	if v, _, ok := raw(t, srv.Client, s.MasterCursorKey("hive")); !ok || v != "41" {
		t.Errorf("master cursor after ForgetMember: %q %v; want 41", v, ok)
	}
	if _, err := s.ForgetMember(ctx, "fe-a"); !errors.Is(err, cursorstore.ErrNoSuchMember) {
		t.Errorf("ForgetMember of a member without keys: %v; want ErrNoSuchMember", err)
	}
}

// CheckExists refuses a cluster without keys and lists the clusters under the
// same prefix, one name each however many keys it holds.
func TestCheckExistsListsTheClusters(t *testing.T) {
	srv := etcdtest.New(t)
	ctx := context.Background()
	for _, k := range []string{"/hmssync/doris-prod/pause", "/hmssync/doris-prod/catalogs/hive/cursor", "/hmssync/doris-prod0/pause",
		"/hmssync/a/members/x/status", "/hmssync/stray", "/other/elsewhere/pause"} {
		if _, err := srv.Client.Put(ctx, k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := cursorstore.New(srv.Client, "", "doris-prod", time.Second, nil).CheckExists(ctx); err != nil {
		t.Errorf("CheckExists of a cluster with keys: %v", err)
	}
	err := cursorstore.New(srv.Client, "", "doris-prd", time.Second, nil).CheckExists(ctx)
	var none *cursorstore.NoClusterError
	const want = "no hmssync cluster under /hmssync/doris-prd/ (clusters: a, doris-prod, doris-prod0)"
	if !errors.As(err, &none) || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckExists of a typo: %v; want %q", err, want)
	}
	err = cursorstore.New(srv.Client, "/empty", "x", time.Second, nil).CheckExists(ctx)
	if !errors.As(err, &none) || !strings.Contains(err.Error(), "(clusters: none under /empty/)") {
		t.Errorf("CheckExists under an empty prefix: %v", err)
	}
}
