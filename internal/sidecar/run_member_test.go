package sidecar_test

import (
	"context"
	"fmt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/embedetcd"
	"github.com/hmssync/hmssync/internal/sidecar"
	"github.com/hmssync/hmssync/internal/testutil"
)

// A second sidecar configured with a member name that a live process runs
// refuses to start, naming the other process; once that one has stopped, the
// name is free again.
func TestRunRefusesAMemberNameAnotherLiveProcessHolds(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	srv := hmstest.NewServer()
	defer srv.Close()
	fe := fetest.NewServer(fetest.Options{Loader: func(context.Context, string) (fetest.Truth, error) { return srv.Snapshot(), nil }})
	defer fe.Close()
	dir := t.TempDir()
	etcdAddr := freeAddr(t)
	etcd, err := embedetcd.Start(context.Background(), embedetcd.Config{Dir: filepath.Join(dir, "etcd"), ClientAddr: etcdAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()

	load := func(name, httpAddr string) config.Config {
		file := filepath.Join(dir, name+".yaml")
		yaml := fmt.Sprintf(`
cluster: twins
member: doris-fe-0
etcd: {endpoints: [%q], lease_ttl: 2s, request_timeout: 500ms}
fe: {url: %q, dialect: native, health_interval: 100ms, unhealthy_grace: 1s}
catalogs:
  - name: hive
    hms_uris: [%q]
    poll_interval: 50ms
http: {listen: %q}
shutdown_timeout: 4s
`, "http://"+etcdAddr, fe.URL, srv.URI(), httpAddr)
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := sidecar.LoadConfig(config.Sources{File: file, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	start := func(cfg config.Config) (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- sidecar.Run(ctx, cfg, config.Secrets{}, zap.NewNop(), zap.NewAtomicLevel(), "test") }()
		return cancel, done
	}
	ready := func(addr string) func() (bool, string) {
		return func() (bool, string) {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		}
	}

	firstAddr, secondAddr := freeAddr(t), freeAddr(t)
	cancelFirst, firstDone := start(load("first", firstAddr))
	defer func() { cancelFirst(); <-firstDone }()
	testutil.Await(t, 20*time.Second, "the first sidecar ready", ready(firstAddr))

	cancelSecond, secondDone := start(load("second", secondAddr))
	select {
	case err := <-secondDone:
		cancelSecond()
		_, port, _ := strings.Cut(firstAddr, ":")
		if err == nil || !strings.Contains(err.Error(), "doris-fe-0") || !strings.Contains(err.Error(), ":"+port) || !strings.Contains(err.Error(), "started") {
			t.Fatalf("second sidecar with the same member: %v; want a refusal naming the first one's address and start time", err)
		}
	case <-time.After(10 * time.Second):
		cancelSecond()
		<-secondDone
		t.Fatal("a second sidecar with the same member name runs beside the first")
	}

	cancelFirst()
	if err := <-firstDone; err != nil {
		t.Fatalf("first sidecar: %v", err)
	}
	firstDone <- nil // for the deferred wait
	cancelSecond, secondDone = start(load("second", secondAddr))
	testutil.Await(t, 20*time.Second, "the second sidecar ready once the first has stopped", ready(secondAddr))
	cancelSecond()
	if err := <-secondDone; err != nil {
		t.Fatalf("second sidecar: %v", err)
	}

	// A process killed without a word leaves the name on its lease until the
	// lease expires: the one that replaces it waits for that, and starts.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + etcdAddr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	lease, err := cli.Grant(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	killed := `{"address":"killed:1","pid":1,"started":"2026-01-01T00:00:00Z"}`
	if _, err := cli.Put(context.Background(), "/hmssync/twins/members/doris-fe-0/holder", killed, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	cancelSecond, secondDone = start(load("second", secondAddr))
	defer func() { cancelSecond(); <-secondDone }()
	testutil.Await(t, 20*time.Second, "the sidecar replacing a killed one ready once the killed one's lease expired", func() (bool, string) {
		select {
		case err := <-secondDone:
			secondDone <- err
			return false, fmt.Sprintf("it exited: %v", err)
		default:
		}
		return ready(secondAddr)()
	})
}
