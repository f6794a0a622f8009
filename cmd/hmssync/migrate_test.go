package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
	"github.com/hmssync/hmssync/internal/testutil"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// devFE starts `dev fe` with args on a free address until the test ends and
// returns its URL.
func devFE(t *testing.T, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, append([]string{"hmssync", "dev", "fe", "--listen", addr, "--log-level", "warn"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev fe: %v\n%s", err, out.String())
		}
	})
	testutil.Await(t, 10*time.Second, "dev fe to announce itself", func() (bool, string) {
		return strings.Contains(out.String(), "fake FE 0: "), out.String()
	})
	return "http://" + addr
}

// feQuery sends stmt to the FE's SQL endpoint as a MySQL client would send it
// to Doris, and returns the envelope's code.
func feQuery(t *testing.T, feURL, stmt string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"stmt": stmt})
	req, err := http.NewRequest(http.MethodPost, feURL+"/api/query/default_cluster/information_schema", strings.NewReader(string(body)))
	must(t, err)
	req.SetBasicAuth("root", "")
	req.Header.Set("X-Doris-Stream", "false")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var env struct{ Code int }
	must(t, json.NewDecoder(resp.Body).Decode(&env))
	return env.Code
}

// runWorkload appends n events to the metastore of dev hms at base and waits
// for the run to end; it returns the current event id after it.
func runWorkload(t *testing.T, base string, n int) int64 {
	t.Helper()
	var wl hmstest.WorkloadState
	controlCall(t, http.MethodPost, base+"/workload", fmt.Sprintf(`{"rate":0,"events":%d}`, n), &wl)
	testutil.Await(t, 10*time.Second, "the workload to end", func() (bool, string) {
		controlCall(t, http.MethodGet, base+"/workload", "", &wl)
		return !wl.Running, fmt.Sprintf("%+v", wl)
	})
	if wl.Error != "" {
		t.Fatalf("workload: %s", wl.Error)
	}
	var st devHMSState
	controlCall(t, http.MethodGet, base+"/state", "", &st)
	return st.Current
}

// migrateConfig writes a sidecar configuration of cluster with dialect.
func migrateConfig(t *testing.T, dir, cluster, dialect, etcd, feURL, hmsURI string) string {
	t.Helper()
	f := filepath.Join(dir, cluster+".yaml")
	yaml := fmt.Sprintf(`
cluster: %s
member: fe-0
etcd: {endpoints: [%q], lease_ttl: 3s, request_timeout: 900ms}
fe: {url: %q, dialect: %s, health_interval: 100ms, unhealthy_grace: 1s}
catalogs:
  - name: hive
    hms_uris: [%q]
    poll_interval: 50ms
http: {listen: %q}
`, cluster, etcd, feURL, dialect, hmsURI, freeAddr(t))
	must(t, os.WriteFile(f, []byte(yaml), 0o600))
	return f
}

// startSidecar runs the sidecar of cfgFile until the returned stop.
func startSidecar(t *testing.T, cfgFile string) (logs *observer.ObservedLogs, stop func()) {
	t.Helper()
	cfg, sec, err := sidecar.LoadConfig(config.Sources{File: cfgFile, Getenv: func(string) string { return "" }})
	must(t, err)
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sidecar.Run(ctx, cfg, sec, zap.New(core), zap.NewAtomicLevel(), buildVersion()) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sidecar of %s: %v", cfgFile, err)
		}
	}
	t.Cleanup(stop)
	return logs, stop
}

// committedCursor reads a cluster's committed cursor of catalog hive.
func committedCursor(t *testing.T, etcd *etcdtest.Server, cluster string) string {
	t.Helper()
	resp, err := etcd.Client.Get(context.Background(), "/hmssync/"+cluster+"/catalogs/hive/cursor")
	must(t, err)
	if len(resp.Kvs) == 0 {
		return "unset"
	}
	return string(resp.Kvs[0].Value)
}

// runApp runs the hmssync command line args and returns its output.
func runArgs(args ...string) (string, error) {
	app := newApp()
	var out strings.Builder
	app.Writer, app.ErrWriter = &out, &out
	err := app.Run(append([]string{"hmssync"}, args...))
	return out.String(), err
}

// docs/migrate-from-doris.md, end to end against `dev fe --catalog hive:sync`
// and `dev hms`: a dry run with the log dialect beside Doris's own sync sends
// nothing to the FE and shows what would be sent; the cut-over (Doris's sync
// turned off, the time noted, cursor seed --from-time, the sidecar started)
// applies only the events after the seed and sends no full REFRESH CATALOG;
// check reports the sync off and the cursor seeded.
func TestMigrateFromDorisOwnSync(t *testing.T) {
	stopHMS, control := devHMS(t)
	defer stopHMS()
	base := "http://" + control
	var st hmstest.State
	controlCall(t, http.MethodGet, base+"/state", "", &st)
	feURL := devFE(t, "--catalog", "hive:sync")
	etcd := etcdtest.New(t)
	ep := etcd.Endpoints()[0]
	dir := t.TempDir()
	dryCfg := migrateConfig(t, dir, "dryrun", "log", ep, feURL, st.URI)
	cfg := migrateConfig(t, dir, "doris-prd", "doris", ep, feURL, st.URI)

	// Doris's own sync has kept the FE up to date so far (workload 1).
	runWorkload(t, base, 30)
	out, err := runArgs("check", "--config", cfg)
	if err == nil || !strings.Contains(out, `✗ catalog hive: the FE's own event sync is off`) || !strings.Contains(out, "not seeded") {
		t.Fatalf("check before the cut-over: %v\n%s\nwant Doris's own sync reported on and the cursor not seeded", err, out)
	}

	// 1. Dry run, under a cluster of its own, seeded at the current id.
	out, err = runArgs("cursor", "seed", "--config", dryCfg, "--catalog", "hive", "--current")
	if err != nil || !strings.Contains(out, "cursor 30 (current)") {
		t.Fatalf("dry run's seed: %v\n%s", err, out)
	}
	dryLogs, stopDry := startSidecar(t, dryCfg)
	afterDry := runWorkload(t, base, 10) // workload 2
	testutil.Await(t, 20*time.Second, "the dry run to reach the metastore's id", func() (bool, string) {
		got := committedCursor(t, etcd, "dryrun")
		return got == fmt.Sprint(afterDry), got
	})
	stopDry()
	if n := dryLogs.FilterMessage("dry run: would send").Len(); n == 0 {
		t.Fatal("the dry run logged no statement it would send")
	}
	for _, e := range dryLogs.FilterMessage("dry run: would apply batch").All() {
		if e.ContextMap()["full_refresh"] == true {
			t.Fatalf("the seeded dry run would full-refresh: %v", e.ContextMap())
		}
	}
	if sent := refreshes(fetestState(t, feURL).Statements); len(sent) != 0 {
		t.Fatalf("the dry run sent %q to the FE", sent)
	}

	// 2. The cut-over: Doris's own sync off, the time noted, the seed.
	if code := feQuery(t, feURL, `ALTER CATALOG hive SET PROPERTIES ("hive.enable_hms_events_incremental_sync" = "false")`); code != 0 {
		t.Fatalf("ALTER CATALOG answered code %d", code)
	}
	// Event times are whole seconds: the noted time is in a second after
	// the last event Doris's sync applied.
	last := time.Now().Unix()
	testutil.Await(t, 3*time.Second, "the next second", func() (bool, string) { return time.Now().Unix() > last, "" })
	cutOver := time.Now().UTC().Format(time.RFC3339)
	out, err = runArgs("cursor", "seed", "--config", cfg, "--catalog", "hive", "--from-time", cutOver)
	if err != nil || !strings.Contains(out, fmt.Sprintf("cursor %d (time %s)", afterDry, cutOver)) ||
		!strings.Contains(out, "seeded /hmssync/doris-prd/catalogs/hive/cursor: unset -> "+fmt.Sprint(afterDry)) {
		t.Fatalf("seed --from-time %s: %v\n%s\nwant cursor %d, the last event before the cut-over", cutOver, err, out, afterDry)
	}

	// 3. Changes after the cut-over (workload 3), then the sidecar.
	end := runWorkload(t, base, 20)
	logs, stop := startSidecar(t, cfg)
	testutil.Await(t, 20*time.Second, "the sidecar to apply up to the metastore's id", func() (bool, string) {
		got := committedCursor(t, etcd, "doris-prd")
		return got == fmt.Sprint(end), got
	})
	sent := refreshes(fetestState(t, feURL).Statements)
	if len(sent) == 0 {
		t.Fatal("the sidecar sent nothing for the events after the seed")
	}
	for _, s := range sent {
		if p, err := fetest.ParseStatement(s); err == nil && p.Kind == fetest.RefreshCatalog && p.InvalidCache() {
			t.Fatalf("a full refresh reached the FE: %q (statements: %q)", s, sent)
		}
		// Workloads own databases named after their run: wl1_*, wl2_* are
		// before the seed, wl3_* after it.
		if strings.Contains(s, "wl1_") || strings.Contains(s, "wl2_") {
			t.Fatalf("an event from before the seed was applied: %q", s)
		}
	}
	if n := logs.FilterMessageSnippet("starting from the seeded cursor").Len(); n != 1 {
		t.Fatalf("%d log lines say the sidecar started from the seed; want 1", n)
	}
	if n := logs.FilterMessage("full refresh").Len(); n != 0 {
		t.Fatalf("the sidecar full-refreshed: %v", logs.FilterMessage("full refresh").All())
	}

	// 4. Verify.
	out, err = runArgs("check", "--config", cfg)
	if err != nil || !strings.Contains(out, fmt.Sprintf("seeded at cursor %d (epoch 0, time %s", afterDry, cutOver)) {
		t.Fatalf("check after the cut-over: %v\n%s\nwant every check passed and the seed reported", err, out)
	}
	out, err = runArgs("status", "--cluster", "doris-prd", "--etcd-endpoints", ep)
	if err != nil || !strings.Contains(out, "fe-0") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	stop()
}

func fetestState(t *testing.T, feURL string) fetest.State {
	t.Helper()
	var s fetest.State
	controlCall(t, http.MethodGet, feURL+"/_fetest/state", "", &s)
	return s
}

// refreshes are the REFRESH statements among stmts (check's probes are not).
func refreshes(stmts []string) []string {
	var out []string
	for _, s := range stmts {
		if strings.HasPrefix(s, "REFRESH ") {
			out = append(out, s)
		}
	}
	return out
}
