package sidecar_test

import (
	"context"
	"fmt"
	"io"
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
	"github.com/hmssync/hmssync/internal/testutil/etcdpartition"
)

// How fast /readyz turns 503 once etcd is cut off (README, /readyz): within
// 3 × etcd.request_timeout of the last answer from etcd (the watches' freshness
// bound), which the configuration keeps below one etcd.lease_ttl
// (request_timeout < lease_ttl / 3). The test asserts the bound the README
// states, in terms of the configuration, and logs what it measured.
func TestReadyzTurns503WithinALeaseTTLOfLosingEtcd(t *testing.T) {
	// Last: after the link's proxy, closed when the test ends.
	t.Cleanup(func() { goleak.VerifyNone(t, leakIgnores...) })
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := (hmstest.Workload{Seed: 1, Databases: 1, Tables: 2, Events: 10}).Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	fe := fetest.NewServer(fetest.Options{Loader: func(context.Context, string) (fetest.Truth, error) { return srv.Snapshot(), nil }})
	defer fe.Close()
	dir := t.TempDir()
	etcdAddr, httpAddr := freeAddr(t), freeAddr(t)
	etcd, err := embedetcd.Start(context.Background(), embedetcd.Config{Dir: filepath.Join(dir, "etcd"), ClientAddr: etcdAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	// The sidecar reaches etcd through a link that the test cuts: a partition,
	// etcd itself keeps running.
	link := etcdpartition.New(t, "http://"+etcdAddr)
	cfgFile := filepath.Join(dir, "sidecar.yaml")
	yaml := fmt.Sprintf(`
cluster: ready
member: only
etcd: {endpoints: [%q], lease_ttl: 3s, request_timeout: 500ms, dial_timeout: 500ms}
fe: {url: %q, dialect: native, health_interval: 100ms, unhealthy_grace: 1s}
catalogs:
  - {name: hive, hms_uris: [%q], poll_interval: 50ms}
http: {listen: %q}
shutdown_timeout: 4s
`, link.Endpoint, fe.URL, srv.URI(), httpAddr)
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, sec, err := sidecar.LoadConfig(config.Sources{File: cfgFile, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- sidecar.Run(ctx, cfg, sec, zap.NewNop(), zap.NewAtomicLevel(), "test") }()
	defer func() { cancel(); <-exited }()
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	testutil.Await(t, 30*time.Second, "ready", func() (bool, string) {
		code, body := readyz()
		return code == http.StatusOK, fmt.Sprintf("/readyz %d %s", code, body)
	})

	lost := time.Now()
	link.Cut()
	defer link.Heal() // the sidecar's shutdown then resigns promptly
	bound := 3 * cfg.Etcd.RequestTimeout
	testutil.Await(t, 10*cfg.Etcd.LeaseTTL, "/readyz 503 after etcd is gone", func() (bool, string) {
		code, body := readyz()
		return code == http.StatusServiceUnavailable, fmt.Sprintf("/readyz %d %s", code, body)
	})
	took := time.Since(lost)
	t.Logf("/readyz turned 503 %s after the link to etcd was cut (bound 3 × request_timeout = %s; lease_ttl %s)", took.Round(10*time.Millisecond), bound, cfg.Etcd.LeaseTTL)
	// The last answer came at most one request_timeout before the stop (the
	// watches ask for progress every request_timeout); one more is the
	// readiness poll's and the scheduler's slack.
	if took > bound+cfg.Etcd.RequestTimeout || took >= cfg.Etcd.LeaseTTL {
		t.Fatalf("/readyz turned 503 %s after the link to etcd was cut; want within 3 × etcd.request_timeout (%s), below one etcd.lease_ttl (%s)", took, bound, cfg.Etcd.LeaseTTL)
	}
}
