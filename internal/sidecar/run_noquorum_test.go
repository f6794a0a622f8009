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
)

// A sidecar started while etcd does not answer (no quorum, not up yet) does not
// exit after etcd.dial_timeout: it starts, serves /readyz 503 and keeps trying,
// and becomes ready, and syncs, once etcd is there. Under an orchestrator an
// exit would be a crash loop.
func TestRunStartsWhileEtcdIsDown(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := (hmstest.Workload{Seed: 1, Databases: 1, Tables: 2, Events: 10}).Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	fe := fetest.NewServer(fetest.Options{Loader: func(context.Context, string) (fetest.Truth, error) { return srv.Snapshot(), nil }})
	defer fe.Close()

	dir := t.TempDir()
	etcdAddr, httpAddr := freeAddr(t), freeAddr(t)
	const dialTimeout = 200 * time.Millisecond
	cfgFile := filepath.Join(dir, "sidecar.yaml")
	yaml := fmt.Sprintf(`
cluster: late
member: only
etcd: {endpoints: [%q], dial_timeout: %s, lease_ttl: 2s, request_timeout: 500ms}
fe: {url: %q, dialect: native, health_interval: 100ms, unhealthy_grace: 1s}
catalogs:
  - name: hive
    hms_uris: [%q]
    poll_interval: 50ms
http: {listen: %q}
shutdown_timeout: 4s
`, "http://"+etcdAddr, dialTimeout, fe.URL, srv.URI(), httpAddr)
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, sec, err := sidecar.LoadConfig(config.Sources{File: cfgFile, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	var runErr error
	started := time.Now()
	go func() {
		defer close(exited)
		runErr = sidecar.Run(ctx, cfg, sec, zap.NewNop(), zap.NewAtomicLevel(), "test")
	}()
	defer func() { cancel(); <-exited }()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Well past the dial timeout, the sidecar runs and says it is not ready.
	testutil.Await(t, 10*time.Second, "ten dial timeouts, not ready and running", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("the sidecar exited while etcd was down: %v", runErr)
		default:
		}
		code, body := get("/readyz")
		if code != http.StatusServiceUnavailable {
			return false, fmt.Sprintf("/readyz %d %s", code, strings.TrimSpace(body))
		}
		return time.Since(started) > 10*dialTimeout, ""
	})
	if code, body := get("/livez"); code != http.StatusOK {
		t.Errorf("/livez %d %s while etcd was down: an etcd outage must not get the sidecar restarted", code, body)
	}

	etcd, err := embedetcd.Start(context.Background(), embedetcd.Config{Dir: filepath.Join(dir, "etcd"), ClientAddr: etcdAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	testutil.Await(t, 30*time.Second, "ready and synced once etcd is up", func() (bool, string) {
		if code, body := get("/readyz"); code != http.StatusOK {
			return false, fmt.Sprintf("/readyz %d %s", code, strings.TrimSpace(body))
		}
		if got := fe.AppliedEventID("hive"); got != srv.CurrentEventID() {
			return false, fmt.Sprintf("FE at %d, metastore at %d", got, srv.CurrentEventID())
		}
		return true, ""
	})
	cancel()
	<-exited
	if runErr != nil {
		t.Errorf("run: %v", runErr)
	}
}
