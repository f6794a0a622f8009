package cursorstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// Two processes with one member name: the second is refused, told who holds
// the name (address, start time), and may take it once the first releases it.
// The key is bound to the holder's lease.
func TestHoldMemberRefusesASecondLiveHolder(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	started := time.Date(2026, 12, 4, 19, 0, 0, 0, time.UTC)
	first, err := s.HoldMember(ctx, "fe-a", cursorstore.MemberHolder{Address: "host-a:8080", PID: 11, Started: started}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client.Get(ctx, s.HolderKey("fe-a"))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("holder key after HoldMember: %v %v; want one key bound to a lease", resp, err)
	}

	_, err = s.HoldMember(ctx, "fe-a", cursorstore.MemberHolder{Address: "host-b:8080", PID: 12, Started: started.Add(time.Hour)}, 10*time.Second)
	var held *cursorstore.MemberHeldError
	if !errors.As(err, &held) {
		t.Fatalf("second HoldMember: %v; want a *MemberHeldError", err)
	}
	if held.Holder.Address != "host-a:8080" || !held.Holder.Started.Equal(started) {
		t.Errorf("holder named %+v; want the first process", held.Holder)
	}
	for _, want := range []string{"fe-a", "host-a:8080", "2026-12-04T19:00:00Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// Another member name is free.
	other, err := s.HoldMember(ctx, "fe-b", cursorstore.MemberHolder{Address: "host-b:8080"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other.Release()

	first.Release()
	first.Release()
	if resp, err := srv.Client.Get(ctx, s.HolderKey("fe-a")); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("holder key after Release: %v %v; want it gone", resp, err)
	}
	again, err := s.HoldMember(ctx, "fe-a", cursorstore.MemberHolder{Address: "host-b:8080"}, 10*time.Second)
	if err != nil {
		t.Fatalf("HoldMember after the first released: %v", err)
	}
	again.Release()
}
