package sidecar_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/embedetcd"
	"github.com/hmssync/hmssync/internal/sidecar"
	"github.com/hmssync/hmssync/internal/testutil"
)

// run logs the metastore's wrong event settings at start, as warnings with the
// fix, and starts all the same.
func TestRunWarnsOfTheMetastoresEventSettings(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	srv := hmstest.NewServer()
	defer srv.Close()
	srv.SetSetting("hive.metastore.dml.events", "false")
	srv.RefuseSetting("hive.metastore.event.db.listener.timetolive")
	fe := fetest.NewServer(fetest.Options{Loader: func(context.Context, string) (fetest.Truth, error) { return srv.Snapshot(), nil }})
	defer fe.Close()
	dir := t.TempDir()
	etcdAddr := freeAddr(t)
	etcd, err := embedetcd.Start(context.Background(), embedetcd.Config{Dir: filepath.Join(dir, "etcd"), ClientAddr: etcdAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	file := filepath.Join(dir, "sidecar.yaml")
	yaml := fmt.Sprintf(`
cluster: settings
member: doris-fe-0
etcd: {endpoints: [%q], lease_ttl: 2s, request_timeout: 500ms}
fe: {url: %q, dialect: native, health_interval: 100ms, unhealthy_grace: 1s}
catalogs:
  - name: hive
    hms_uris: [%q]
    hms_user: sync
    poll_interval: 50ms
http: {listen: %q}
shutdown_timeout: 4s
`, "http://"+etcdAddr, fe.URL, srv.URI(), freeAddr(t))
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := sidecar.LoadConfig(config.Sources{File: file, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sidecar.Run(ctx, cfg, config.Secrets{}, zap.New(core), zap.NewAtomicLevel(), "test") }()
	defer func() { cancel(); <-done }()

	testutil.Await(t, 20*time.Second, "the settings read at start", func() (bool, string) {
		return logs.FilterMessage("metastore event settings read").Len() == 1, fmt.Sprintf("%d log entries", logs.Len())
	})
	wrong := logs.FilterMessage("metastore event setting wrong").All()
	if len(wrong) != 1 || !strings.Contains(wrong[0].ContextMap()["check"].(string), "hive.metastore.dml.events") ||
		!strings.Contains(wrong[0].ContextMap()["fix"].(string), "hive.metastore.dml.events=true") ||
		wrong[0].Level != zapcore.WarnLevel || wrong[0].ContextMap()["catalog"] != "hive" {
		t.Fatalf("want one warning about hive.metastore.dml.events with its fix, got %+v", wrong)
	}
	hidden := logs.FilterMessage("metastore event setting could not be verified").All()
	if len(hidden) != 1 || !strings.Contains(hidden[0].ContextMap()["check"].(string), "timetolive") ||
		!strings.Contains(hidden[0].ContextMap()["detail"].(string), "refuses to reveal") {
		t.Fatalf("want one warning that the TTL could not be verified, got %+v", hidden)
	}
	// A warning, not a refusal: the sidecar syncs.
	if err := srv.CreateDatabase("after_warning"); err != nil {
		t.Fatal(err)
	}
	id := srv.CurrentEventID()
	testutil.Await(t, 20*time.Second, "the FE to apply the event logged after the warnings", func() (bool, string) {
		got := fe.AppliedEventID("hive")
		return got >= id, fmt.Sprintf("applied %d, want %d", got, id)
	})
}
