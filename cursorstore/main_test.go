package cursorstore_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const cluster = "test"

func newStore(t *testing.T, cli *clientv3.Client) *cursorstore.Store {
	t.Helper()
	s := cursorstore.New(cli, "/hmssync", cluster, 2*time.Second, zaptest.NewLogger(t))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// leaderToken makes a leader key by hand, as a won election leaves it: a key
// under the election prefix bound to a fresh lease. Its create revision is the
// fencing token.
func leaderToken(t *testing.T, cli *clientv3.Client, s *cursorstore.Store, name string) election.Token {
	t.Helper()
	ctx := context.Background()
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	key := s.ElectionPrefix() + "/" + name
	resp, err := cli.Put(ctx, key, name, clientv3.WithLease(lease.ID))
	if err != nil {
		t.Fatalf("put leader key: %v", err)
	}
	return election.Token{Key: key, Rev: resp.Header.Revision, Lease: lease.ID}
}

// raw reads a key's stored bytes and mod revision straight from etcd.
func raw(t *testing.T, cli *clientv3.Client, key string) (string, int64, bool) {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0, false
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision, true
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
