package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

func TestStepDownAndDeletedKeyEndTheTermAndTheMemberCampaignsAgain(t *testing.T) {
	srv := etcdtest.New(t)
	a := start(t, srv.NewClient(t), "a", nil)
	eventually(t, 10*time.Second, "a master", a.el.IsMaster)
	first, _ := a.el.Current()

	a.el.StepDown("fenced write rejected")
	select {
	case <-first.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("term still open 10s after StepDown")
	}
	// Alone, a wins again, with a new key and a higher epoch.
	eventually(t, 10*time.Second, "a master again", func() bool {
		term, ok := a.el.Current()
		return ok && term.Token.Rev > first.Token.Rev
	})
	second, _ := a.el.Current()
	if second.Token.Key == first.Token.Key {
		t.Fatalf("new term reuses the old key %s", first.Token.Key)
	}
	if resp, err := srv.Client.Get(context.Background(), first.Token.Key); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("old leader key %s after step down: %v %v; want deleted", first.Token.Key, resp, err)
	}

	// An operator deletes the leader key: the master notices and steps down.
	if _, err := srv.Client.Delete(context.Background(), second.Token.Key); err != nil {
		t.Fatalf("delete leader key: %v", err)
	}
	select {
	case <-second.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("term still open 10s after its leader key was deleted")
	}
	eventually(t, 10*time.Second, "a master a third time", func() bool {
		term, ok := a.el.Current()
		return ok && term.Token.Rev > second.Token.Rev
	})
}

func TestResignWhenNotMasterDoesNothing(t *testing.T) {
	srv := etcdtest.New(t)
	a := start(t, srv.NewClient(t), "a", nil)
	eventually(t, 10*time.Second, "a master", a.el.IsMaster)
	b := start(t, srv.NewClient(t), "b", nil)
	eventually(t, 10*time.Second, "b follows a", func() bool { return b.el.Leader() == "a" })
	if err := b.el.Resign(context.Background()); err != nil {
		t.Fatalf("follower Resign: %v", err)
	}
	b.el.StepDown("no reason")
	if !a.el.IsMaster() || b.el.IsMaster() {
		t.Fatal("a follower's Resign/StepDown changed the roles")
	}
}
