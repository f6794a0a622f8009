package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
	"github.com/hmssync/hmssync/internal/testutil"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// `run --embedded-etcd` end to end through the production wiring: the sidecar
// syncs the metastore into the FE, serves its HTTP surface without secrets, and
// exits promptly when its context ends (the signal). The metastore speaks TLS and
// requires a client certificate, so the catalog's hms_tls keys (CA, client
// certificate, server name) must reach the client; the demo covers plain Thrift.
func TestRunEmbeddedSingleNode(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	clientCert, err := hmstest.NewKeyPair("hmssync")
	if err != nil {
		t.Fatal(err)
	}
	srv := hmstest.NewServer(hmstest.WithClientCAs(clientCert.Pool()))
	defer srv.Close()
	if err := (hmstest.Workload{Seed: 1, Databases: 1, Tables: 3, Events: 20}).Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	fe := fetest.NewServer(fetest.Options{Password: "pw-7f3a", Loader: func(context.Context, string) (fetest.Truth, error) { return srv.Snapshot(), nil }})
	defer fe.Close()

	dir := t.TempDir()
	pwFile := filepath.Join(dir, "fe.pw")
	if err := os.WriteFile(pwFile, []byte("pw-7f3a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile := filepath.Join(dir, "hms-ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	for f, b := range map[string][]byte{caFile: srv.CertPEM(), certFile: clientCert.CertPEM, keyFile: clientCert.KeyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	httpAddr := freeAddr(t)
	cfgFile := filepath.Join(dir, "sidecar.yaml")
	yaml := fmt.Sprintf(`
cluster: single
member: only
etcd: {embedded_dir: %q, embedded_listen: %q, lease_ttl: 2s, request_timeout: 500ms}
fe: {url: %q, dialect: native, password_file: %q, health_interval: 100ms, unhealthy_grace: 1s}
catalogs:
  - name: hive
    hms_uris: [%q]
    poll_interval: 50ms
    hms_tls: {enabled: true, ca_file: %q, cert_file: %q, key_file: %q, server_name: localhost}
http: {listen: %q}
`, filepath.Join(dir, "etcd"), freeAddr(t), fe.URL, pwFile, srv.URI(), caFile, certFile, keyFile, httpAddr)
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, sec, err := sidecar.LoadConfig(config.Sources{File: cfgFile, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logCore, logs := observer.New(zap.InfoLevel)
	go func() { done <- sidecar.Run(ctx, cfg, sec, zap.New(logCore), zap.NewAtomicLevel(), buildVersion()) }()
	defer func() { cancel(); <-done }()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testutil.Await(t, 20*time.Second, "the FE to hold the metastore's state", func() (bool, string) {
		if got := fe.AppliedEventID("hive"); got != srv.CurrentEventID() {
			return false, fmt.Sprintf("FE at %d, metastore at %d", got, srv.CurrentEventID())
		}
		return fetest.Diff(srv.Snapshot(), fe.Snapshot("hive")) == "", "caches differ"
	})
	if err := (hmstest.Workload{Seed: 2, Databases: 1, Tables: 2, Events: 15}).Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	testutil.Await(t, 10*time.Second, "the new events on the FE", func() (bool, string) {
		return fe.AppliedEventID("hive") == srv.CurrentEventID(), ""
	})
	testutil.Await(t, 5*time.Second, "/readyz", func() (bool, string) {
		code, body := get("/readyz")
		return code == 200, body
	})
	// /debug/pprof is opt-in (http.pprof): not served by default.
	for path, want := range map[string]int{"/livez": 200, "/master": 200, "/replica": 503, "/debug/pprof/": 404, "/debug/pprof/goroutine": 404} {
		if code, body := get(path); code != want {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
	// The FE sees a batch before the sidecar has committed it and moved its own
	// cursor, so /status may trail the FE for a moment: await it, then check it whole.
	type status struct {
		Member, Role string
		Catalogs     []struct {
			Name   string
			Cursor int64
		}
	}
	var st status
	var body string
	testutil.Await(t, 5*time.Second, "/status to report the last event", func() (bool, string) {
		var code int
		code, body = get("/status")
		if code != 200 {
			return false, fmt.Sprintf("/status: %d %s", code, body)
		}
		st = status{}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("/status is not JSON: %v\n%s", err, body)
		}
		return len(st.Catalogs) == 1 && st.Catalogs[0].Cursor == srv.CurrentEventID(), fmt.Sprintf("%+v", st)
	})
	if strings.Contains(body, "pw-7f3a") {
		t.Errorf("/status shows the FE password:\n%s", body)
	}
	if st.Member != "only" || st.Role != "master" || st.Catalogs[0].Name != "hive" {
		t.Errorf("/status = %+v, want member only, master, catalog hive", st)
	}
	_, metrics := get("/metrics")
	for _, series := range []string{
		"hmssync_events_received_total", "hmssync_events_applied_total", "hmssync_events_skipped_total",
		"hmssync_cursor_event_id", "hmssync_master_cursor_event_id", "hmssync_hms_current_event_id",
		"hmssync_lag_events", "hmssync_lag_seconds", "hmssync_fetch_duration_seconds", "hmssync_decode_duration_seconds",
		"hmssync_apply_duration_seconds", "hmssync_commit_duration_seconds", "hmssync_fe_statements_total",
		"hmssync_full_refreshes_total", "hmssync_role", "hmssync_leader_transitions_total",
	} {
		if !strings.Contains(metrics, "\n"+series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	if !strings.Contains(metrics, `hmssync_role{role="master"} 1`) {
		t.Error(`/metrics: want hmssync_role{role="master"} 1`)
	}
	if code, body := get("/log/level"); code != 200 || !strings.Contains(body, "info") {
		t.Errorf("/log/level: %d %s", code, body)
	}

	// Every line names the member once (a logger built with it twice writes
	// the key twice); the election says when it became master.
	if logs.FilterLoggerName("election").FilterMessage("became master").Len() == 0 {
		t.Error("no election log line \"became master\"")
	}
	for _, e := range logs.All() {
		n := 0
		for _, f := range e.Context {
			if f.Key == "member" {
				n++
			}
		}
		if n > 1 {
			t.Errorf("%s %q carries the member key %d times", e.LoggerName, e.Message, n)
		}
	}

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run ended with %v", err)
		}
		done <- nil
	case <-time.After(cfg.ShutdownTimeout):
		t.Fatalf("run did not stop within shutdown_timeout %s", cfg.ShutdownTimeout)
	}
	t.Logf("stopped in %s", time.Since(start))
}

// leakIgnores are goroutines that the etcd client and server libraries leave for a
// moment after Close.
var leakIgnores = []goleak.Option{
	goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
}
