package embedetcd_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/internal/embedetcd"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDataSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// withServer runs f against a server on dir, then stops it.
	withServer := func(f func(cli *clientv3.Client)) {
		srv, err := embedetcd.Start(ctx, embedetcd.Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		cli, err := srv.Client()
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		f(cli)
	}
	withServer(func(cli *clientv3.Client) {
		if _, err := cli.Put(ctx, "/hmssync/x", "42"); err != nil {
			t.Fatalf("put: %v", err)
		}
	})
	withServer(func(cli *clientv3.Client) {
		resp, err := cli.Get(ctx, "/hmssync/x")
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "42" {
			t.Fatalf("after restart got %v, want /hmssync/x = 42", resp.Kvs)
		}
	})
}

func TestStartWithoutDirIsAnError(t *testing.T) {
	if _, err := embedetcd.Start(context.Background(), embedetcd.Config{}); err == nil {
		t.Fatal("want an error for a missing data directory")
	}
}
