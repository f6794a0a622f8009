package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestPrometheusSeesEveryExpressionAndTheNoMasterAlert runs a real Prometheus
// (Debian's package) scraping three `hmssync run` sidecars, wired to `hmssync
// dev etcd`, a fake metastore with a workload and three fake FEs, all on
// loopback. It checks that every metric the alert rules and the dashboard use
// has series, that every dashboard query returns data, and that HmssyncNoMaster
// goes pending once every FE fails and the members give up the master role.
func TestPrometheusSeesEveryExpressionAndTheNoMasterAlert(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("HMSSYNC_MONITORING_E2E") == "require" {
			t.Fatal("prometheus is not installed (apt-get install prometheus) and HMSSYNC_MONITORING_E2E=require")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus); set HMSSYNC_MONITORING_E2E=require to fail instead")
	}
	rulesFile, err := filepath.Abs("prometheus/hmssync-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ruleExprs := loadRuleExprs(t, rulesFile)
	panelExprs := loadDashboardExprs(t, "grafana/hmssync-dashboard.json")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "hmssync")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/hmssync")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	etcdAddr, hmsAddr, hmsControl := freeAddr(t), freeAddr(t), freeAddr(t)
	start(ctx, t, dir, "etcd", bin, nil, "dev", "etcd", "--listen", etcdAddr, "--dir", filepath.Join(dir, "etcd-data"))
	start(ctx, t, dir, "hms", bin, nil, "dev", "hms", "--listen", hmsAddr, "--control", hmsControl, "--workload", "20")
	fes := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	start(ctx, t, dir, "fe", bin, nil, "dev", "fe", "--independent", "--listen", strings.Join(fes, ","))
	for _, a := range append([]string{etcdAddr, hmsAddr, hmsControl}, fes...) {
		awaitListening(ctx, t, a)
	}
	var targets []string
	for i, fe := range fes {
		listen := freeAddr(t)
		targets = append(targets, listen)
		start(ctx, t, dir, fmt.Sprintf("sidecar-%d", i), bin, []string{
			// Short timings, so that losing the master takes seconds.
			"HMSSYNC_ETCD_LEASE_TTL=2s", "HMSSYNC_ETCD_REQUEST_TIMEOUT=500ms",
			"HMSSYNC_FE_HEALTH_INTERVAL=500ms", "HMSSYNC_FE_UNHEALTHY_GRACE=2s", "HMSSYNC_FE_TIMEOUT=2s",
		}, "run", "--cluster", "e2e", "--member", fmt.Sprintf("fe-%d", i),
			"--etcd-endpoints", "http://"+etcdAddr, "--fe-url", "http://"+fe, "--fe-dialect", "native",
			"--hms-uris", "thrift://"+hmsAddr, "--http-listen", listen, "--log-format", "json")
	}

	promAddr := freeAddr(t)
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: hmssync
    static_configs: [{targets: [%q, %q, %q]}]
`, rulesFile, targets[0], targets[1], targets[2])
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start(ctx, t, dir, "prometheus", prom, nil, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	p := promClient{base: "http://" + promAddr}

	await(ctx, t, "Prometheus scrapes all three sidecars", func() (bool, string) {
		v, err := p.query(ctx, `count(up{job="hmssync"} == 1)`)
		return err == nil && v.value() == 3, fmt.Sprintf("%v %v", v, err)
	})
	await(ctx, t, "one sidecar is master", func() (bool, string) {
		v, err := p.query(ctx, `sum(hmssync_role{role="master"})`)
		return err == nil && v.value() == 1, fmt.Sprintf("%v %v", v, err)
	})

	// Incidents the rules and the dashboard watch for: two poison events (on
	// every member a self-heal of the table one names, and of the catalog for
	// the other, which names nothing: a full refresh), and an FE answering
	// 503 twice (retries).
	post(ctx, t, "http://"+hmsControl+"/events",
		`{"eventType":"CREATE_TABLE","dbName":"sales","tableName":"poison","message":"{not json","messageFormat":"json-0.2"}`+"\n"+
			`{"eventType":"CREATE_TABLE","message":"{not json","messageFormat":"json-0.2"}`+"\n")
	post(ctx, t, "http://"+fes[0]+"/_fetest/faults", `{"native":true,"match":"/changes","http_status":503,"times":2}`)

	// Every metric the rules use has series; every rule expression evaluates.
	selector := regexp.MustCompile(`\b(hmssync_[a-z_]+|up)(\{[^}]*\})?`)
	var selectors []string
	seen := map[string]bool{}
	for _, e := range append(append([]string{}, ruleExprs...), panelExprs...) {
		for _, s := range selector.FindAllString(grafanaVars(e), -1) {
			if !seen[s] {
				seen[s] = true
				selectors = append(selectors, s)
			}
		}
	}
	sort.Strings(selectors)
	if len(selectors) < 15 {
		t.Fatalf("found only %d metric selectors in the rules and dashboard: %v", len(selectors), selectors)
	}
	await(ctx, t, "every selector of the rules and the dashboard has series", func() (bool, string) {
		var missing []string
		for _, s := range selectors {
			v, err := p.query(ctx, "count("+s+")")
			if err != nil || v.value() <= 0 {
				missing = append(missing, s)
			}
		}
		return len(missing) == 0, fmt.Sprintf("no series for %v", missing)
	})
	for _, e := range ruleExprs {
		if _, err := p.query(ctx, e); err != nil {
			t.Errorf("rule expression %q: %v", e, err)
		}
	}
	await(ctx, t, "every dashboard query returns data", func() (bool, string) {
		var empty []string
		for _, e := range panelExprs {
			v, err := p.query(ctx, grafanaVars(e))
			if err != nil || len(v.Data.Result) == 0 {
				empty = append(empty, fmt.Sprintf("%s (%v)", e, err))
			}
		}
		return len(empty) == 0, fmt.Sprintf("no data for %v", empty)
	})
	if v, err := p.query(ctx, `ALERTS{alertname="HmssyncNoMaster"}`); err != nil || len(v.Data.Result) != 0 {
		t.Fatalf("HmssyncNoMaster is active while a master exists: %v %v", v, err)
	}

	// Every FE fails from now on: the master resigns after fe.unhealthy_grace
	// and no member campaigns, for good.
	for _, fe := range fes {
		post(ctx, t, "http://"+fe+"/_fetest/faults", `{"http_status":503}`)
	}
	await(ctx, t, "no sidecar is master", func() (bool, string) {
		v, err := p.query(ctx, `sum(hmssync_role{role="master"})`)
		return err == nil && len(v.Data.Result) == 1 && v.value() == 0, fmt.Sprintf("%v %v", v, err)
	})
	await(ctx, t, "HmssyncNoMaster is pending", func() (bool, string) {
		v, err := p.query(ctx, `ALERTS{alertname="HmssyncNoMaster", alertstate="pending", job="hmssync"}`)
		return err == nil && len(v.Data.Result) == 1, fmt.Sprintf("%v %v", v, err)
	})
}

// grafanaVars replaces the dashboard's variables with what Grafana would send
// for "All" and a short range.
func grafanaVars(e string) string {
	return strings.NewReplacer(`$job`, `.*`, `$__rate_interval`, `15s`).Replace(e)
}

func loadRuleExprs(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out = append(out, strings.TrimSpace(r.Expr))
		}
	}
	if len(out) < 9 {
		t.Fatalf("want the 9 alert rules, got %d", len(out))
	}
	return out
}

func loadDashboardExprs(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

// start runs a process until the test ends: SIGTERM, then SIGKILL after 5 s.
// Its output goes to DIR/NAME.log, shown when the test fails.
func start(ctx context.Context, t *testing.T, dir, name, bin string, env []string, args ...string) {
	t.Helper()
	logFile := filepath.Join(dir, name+".log")
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("--- %s (last lines):\n%s", name, b)
		}
	})
}

// await polls cond every 200 ms until it holds, or fails the test with its
// last report after 90 s.
func await(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok, report := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within 90 s: %s", what, report)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func awaitListening(ctx context.Context, t *testing.T, addr string) {
	t.Helper()
	await(ctx, t, addr+" listens", func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
}

func post(ctx context.Context, t *testing.T, u, body string) {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s: %s", u, resp.Status, b)
	}
}

// freeAddr is a loopback address nothing listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type promClient struct{ base string }

// vector is an instant query's answer.
type vector struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// value is the first sample's value, -1 when there is none.
func (v vector) value() float64 {
	if len(v.Data.Result) == 0 {
		return -1
	}
	s, _ := v.Data.Result[0].Value[1].(string)
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return -1
	}
	return f
}

func (p promClient) query(ctx context.Context, q string) (vector, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, p.base+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return vector{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return vector{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return vector{}, err
	}
	var v vector
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&v); err != nil {
		return vector{}, fmt.Errorf("%s: %s", resp.Status, b)
	}
	if v.Status != "success" {
		return v, fmt.Errorf("%s", v.Error)
	}
	return v, nil
}
