package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
	"github.com/hmssync/hmssync/internal/testutil"
)

// runWait runs `hmssync wait args...` and returns its output and exit status.
func runWait(t *testing.T, args ...string) (string, int) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	err := app.Run(append([]string{"hmssync", "wait"}, args...))
	var ec cli.ExitCoder
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ec):
		return out.String() + err.Error(), ec.ExitCode()
	}
	return out.String() + err.Error(), 1
}

func TestWaitPrintsOneLineAndExitsByOutcome(t *testing.T) {
	answers := map[string]struct {
		code int
		body string
	}{
		"ok":      {200, `{"catalog":"hive","scope":"member","target_event_id":48213,"applied_event_id":48213,"waited_seconds":0.41}`},
		"late":    {504, `{"catalog":"hive","scope":"cluster","target_event_id":48213,"applied_event_id":4810,"waited_seconds":2.01,"reason":"member m2 at 4810"}`},
		"nocat":   {404, `{"catalog":"nope","scope":"member","error":"catalog \"nope\" is not served by this sidecar"}`},
		"garbage": {502, `<html>bad gateway</html>`},
	}
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RawQuery)
		a := answers[r.URL.Query().Get("catalog")]
		if a.code == 0 {
			a = answers["nocat"]
		}
		w.WriteHeader(a.code)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()
	for _, c := range []struct {
		args []string
		exit int
		want []string
	}{
		{[]string{"--catalog", "ok"}, 0, []string{"caught up: hive at 48213 (waited 0.41 s)"}},
		{[]string{"--catalog", "late", "--scope", "cluster", "--timeout", "2s"}, 2, []string{"timed out after 2.01 s", "waiting for 48213, reached 4810", "member m2 at 4810"}},
		{[]string{"--catalog", "nope"}, 1, []string{"HTTP 404", `catalog "nope" is not served`}},
		{[]string{"--catalog", "garbage"}, 1, []string{"HTTP 502", "not the answer of /v1/wait"}},
	} {
		out, exit := runWait(t, append(c.args, "--url", srv.URL)...)
		if exit != c.exit {
			t.Errorf("wait %v: exit %d (%q), want %d", c.args, exit, out, c.exit)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("wait %v: output %q does not say %q", c.args, out, w)
			}
		}
	}
	if len(got) == 0 || !strings.Contains(got[0], "timeout=30s") || !strings.Contains(got[0], "scope=member") {
		t.Errorf("first query %v, want the default timeout 30s and scope member", got)
	}
	out, exit := runWait(t, "--catalog", "ok", "--db", "sales", "--table", "orders", "--url", srv.URL)
	if exit != 0 || !strings.Contains(got[len(got)-1], "db=sales") || !strings.Contains(got[len(got)-1], "table=orders") {
		t.Errorf("--db and --table: exit %d %q, query %q", exit, out, got[len(got)-1])
	}
}

func TestWaitFindsTheSidecar(t *testing.T) {
	dir := t.TempDir()
	file := func(listen string) string {
		p := filepath.Join(dir, strings.NewReplacer(":", "_", "[", "", "]", "").Replace(listen)+".yaml")
		if err := os.WriteFile(p, []byte(fmt.Sprintf("http: {listen: %q}\n", listen)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ url, config, want, err string }{
		{"", "", "http://127.0.0.1:9108", ""},
		{"http://sidecars.hmssync:9108/", "", "http://sidecars.hmssync:9108", ""},
		{"", file(":9200"), "http://127.0.0.1:9200", ""},
		{"", file("0.0.0.0:9201"), "http://127.0.0.1:9201", ""},
		{"", file("[::]:9202"), "http://127.0.0.1:9202", ""},
		{"", file("10.1.2.3:9203"), "http://10.1.2.3:9203", ""},
		{"ftp://x", "", "", "--url"},
		{"http://x:1", file(":1"), "", "not both"},
	} {
		got, err := waitBaseURL(c.url, c.config)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("url %q config %q: error %v, want one saying %q", c.url, c.config, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("url %q config %q: %q %v, want %q", c.url, c.config, got, err, c.want)
		}
	}
	if _, exit := runWait(t, "--catalog", "hive", "extra"); exit != 1 {
		t.Errorf("a positional argument: exit %d, want 1", exit)
	}
}

// `hmssync wait --config` against a running sidecar: exit 0 once the FE holds
// the change, exit 2 within about its timeout while the master is paused, with
// the pause named.
func TestWaitAgainstARunningSidecar(t *testing.T) {
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := (hmstest.Workload{Seed: 1, Databases: 1, Tables: 3, Events: 20}).Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	fe := fetest.NewServer(fetest.Options{Password: "pw", Loader: func(context.Context, string) (fetest.Truth, error) { return srv.Snapshot(), nil }})
	defer fe.Close()
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "fe.pw")
	if err := os.WriteFile(pwFile, []byte("pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	etcdAddr, httpAddr := freeAddr(t), freeAddr(t)
	cfgFile := filepath.Join(dir, "sidecar.yaml")
	yaml := fmt.Sprintf(`
cluster: single
member: only
etcd: {embedded_dir: %q, embedded_listen: %q, lease_ttl: 2s, request_timeout: 500ms}
fe: {url: %q, dialect: native, password_file: %q, health_interval: 100ms, unhealthy_grace: 1s}
catalogs:
  - {name: hive, hms_uris: [%q], poll_interval: 50ms}
http: {listen: %q, wait_max_timeout: 1m, max_waiters: 1}
`, filepath.Join(dir, "etcd"), etcdAddr, fe.URL, pwFile, srv.URI(), httpAddr)
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, sec, err := sidecar.LoadConfig(config.Sources{File: cfgFile, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sidecar.Run(ctx, cfg, sec, zap.NewNop(), zap.NewAtomicLevel(), buildVersion()) }()
	defer func() { cancel(); <-done }()
	testutil.Await(t, 20*time.Second, "the sidecar to answer /v1/wait", func() (bool, string) {
		out, exit := runWait(t, "--config", cfgFile, "--catalog", "hive", "--timeout", "0s")
		return exit == 0, out
	})

	if err := (hmstest.Workload{Seed: 2, Databases: 1, Tables: 2, Events: 15}).Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	cur := srv.CurrentEventID()
	out, exit := runWait(t, "--config", cfgFile, "--catalog", "hive", "--timeout", "20s")
	if got := fe.AppliedEventID("hive"); exit != 0 || got < cur {
		t.Fatalf("wait after the change up to %d: exit %d %q with the FE at %d, want 0 with the FE holding it", cur, exit, out, got)
	}
	if want := fmt.Sprintf("caught up: hive at %d (waited ", cur); !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("output %q, want one line starting %q", out, want)
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + etcdAddr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), "/hmssync/single/pause", "test"); err != nil {
		t.Fatal(err)
	}
	testutil.Await(t, 10*time.Second, "the sidecar to see the pause key", func() (bool, string) {
		resp, err := http.Get("http://" + httpAddr + "/status")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return strings.Contains(b.String(), `"paused": true`), b.String()
	})
	if err := (hmstest.Workload{Seed: 3, Databases: 1, Tables: 1, Events: 3}).Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, exit = runWait(t, "--config", cfgFile, "--catalog", "hive", "--timeout", "2s")
	if took := time.Since(start); exit != 2 || took > 3*time.Second || !strings.Contains(out, "paused") {
		t.Fatalf("wait with the master paused: exit %d after %s: %q; want 2 within 3s naming the pause", exit, took, out)
	}

	// The configuration's bounds reach the endpoint: http.wait_max_timeout
	// (1m) and http.max_waiters (1, taken by a waiter held by the pause).
	if out, exit := runWait(t, "--config", cfgFile, "--catalog", "hive", "--timeout", "2m"); exit != 1 || !strings.Contains(out, "http.wait_max_timeout (1m0s)") {
		t.Errorf("--timeout 2m with http.wait_max_timeout 1m: exit %d %q, want 1 naming the bound", exit, out)
	}
	held := make(chan int, 1)
	go func() {
		_, exit := runWait(t, "--config", cfgFile, "--catalog", "hive", "--timeout", "20s")
		held <- exit
	}()
	testutil.Await(t, 10*time.Second, "one waiter held by the pause", func() (bool, string) {
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return strings.Contains(b.String(), "\nhmssync_waiters 1\n"), "hmssync_waiters is not 1"
	})
	if out, exit := runWait(t, "--config", cfgFile, "--catalog", "hive", "--timeout", "1s"); exit != 1 || !strings.Contains(out, "HTTP 429") {
		t.Errorf("a second waiter with http.max_waiters 1: exit %d %q, want 1 with HTTP 429", exit, out)
	}
	if _, err := cli.Delete(context.Background(), "/hmssync/single/pause"); err != nil {
		t.Fatal(err)
	}
	if exit := <-held; exit != 0 {
		t.Errorf("the held waiter exited %d once the pause key was removed, want 0", exit)
	}
}
