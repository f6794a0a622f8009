package cursorstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// SetMasterLed writes only while a member campaigns for the master role, in
// the same transaction: with no elector running it writes nothing and says so;
// with one it sets the cursor; once the elector has stopped (its lease revoked)
// it refuses again. SetMaster (cursor reset) needs no master.
func TestSetMasterLedNeedsACampaigningMember(t *testing.T) {
	srv := etcdtest.New(t)
	s := newStore(t, srv.Client)
	ctx := context.Background()
	key := "/hmssync/test/catalogs/hive/cursor"
	if _, err := s.SetMaster(ctx, "hive", 10); err != nil {
		t.Fatal(err)
	}
	refused := func(when string) {
		t.Helper()
		_, err := s.SetMasterLed(ctx, "hive", 20)
		if !errors.Is(err, cursorstore.ErrNoMaster) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), s.ElectionPrefix()) {
			t.Fatalf("%s: SetMasterLed = %v; want ErrNoMaster naming %s and the election prefix", when, err, key)
		}
		if v, _, _ := raw(t, srv.Client, key); v != "10" {
			t.Fatalf("%s: the refused set left %q; want 10", when, v)
		}
	}
	refused("no member running")

	el, stop := runElector(t, election.Config{Client: srv.NewClient(t), Prefix: s.ElectionPrefix(), Name: "a",
		LeaseTTL: 3 * time.Second, RequestTimeout: 900 * time.Millisecond, Logger: zaptest.NewLogger(t)})
	eventually(t, 10*time.Second, "a master", el.IsMaster)
	old, err := s.SetMasterLed(ctx, "hive", 20)
	if err != nil || old.Value != 10 {
		t.Fatalf("SetMasterLed with a master: old %+v, %v; want 10 replaced", old, err)
	}
	if v, _, _ := raw(t, srv.Client, key); v != "20" {
		t.Fatalf("after SetMasterLed %s holds %q; want 20", key, v)
	}

	stop()
	if _, err := s.SetMaster(ctx, "hive", 10); err != nil {
		t.Fatal(err)
	}
	refused("after the only member stopped")
	if _, err := s.SetMaster(ctx, "hive", cursorstore.Unknown); err != nil {
		t.Fatalf("SetMaster -1 (cursor reset) with no member: %v", err)
	}
}
