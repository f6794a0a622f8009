package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/testutil"
	"github.com/hmssync/hmssync/internal/testutil/etcdpartition"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// The end-to-end harness: a real embedded etcd, a fake metastore speaking Thrift,
// fake FEs speaking HTTP, and sidecars built from the production packages, all in
// this process.

const (
	testCluster = "e2e"
	testCatalog = "hive"
	etcdPrefix  = "/hmssync"
	fePassword  = "fe-secret"
)

var (
	cursorKey = etcdPrefix + "/" + testCluster + "/catalogs/" + testCatalog + "/cursor"
	pauseKey  = etcdPrefix + "/" + testCluster + "/pause"
)

type harnessOpts struct {
	dialect  string        // native (default) or doris
	leaseTTL time.Duration // default 2s
	poll     time.Duration // default 50ms
	batch    int           // default 20
	skip     []string      // catalogs' skip_event_types
	include  []string      // catalogs' include patterns (anchored as the configuration does)
	// noPushdown is the catalogs' NoPushdown.
	noPushdown bool
	// hms are options of the harness's metastore (e.g. hmstest.WithSASL).
	hms []hmstest.Option
	// kerberos, if set, is every member's hms_auth: with WithSASL in hms, the
	// sidecars sync over Kerberos.
	kerberos *hms.KerberosConfig
}

type harness struct {
	t    *testing.T
	o    harnessOpts
	etcd *etcdtest.Server
	hms  *hmstest.Server
	// fes[i] is member i's FE. With doris they are endpoints of one cluster.
	fes       []*fetest.Server
	feCluster *fetest.Cluster

	seed int64 // of the next churn's workload

	mu      sync.Mutex
	members []*member
	commits []int64 // every committed master cursor value, in order
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	if o.dialect == "" {
		o.dialect = "native"
	}
	if o.leaseTTL == 0 {
		o.leaseTTL = 2 * time.Second
	}
	if o.poll == 0 {
		o.poll = 50 * time.Millisecond
	}
	if o.batch == 0 {
		o.batch = 20
	}
	h := &harness{t: t, o: o, etcd: etcdtest.New(t), hms: hmstest.NewServer(o.hms...)}
	t.Cleanup(h.hms.Close)
	loader := func(ctx context.Context, catalog string) (fetest.Truth, error) { return h.hms.Snapshot(), nil }
	feOpts := fetest.Options{User: "root", Password: fePassword, Loader: loader}
	if o.dialect == "doris" {
		h.feCluster = fetest.NewCluster(3, feOpts)
		t.Cleanup(h.feCluster.Close)
		h.fes = h.feCluster.Servers()
	} else {
		for i := 0; i < 3; i++ {
			fe := fetest.NewServer(feOpts)
			t.Cleanup(fe.Close)
			h.fes = append(h.fes, fe)
		}
	}
	h.recordCommits()
	return h
}

// recordCommits follows the committed master cursor with the test's own client, to
// check that it never decreases.
func (h *harness) recordCommits() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.t.Cleanup(func() { cancel(); <-done })
	wch := h.etcd.Client.Watch(clientv3.WithRequireLeader(ctx), cursorKey)
	go func() {
		defer close(done)
		for resp := range wch {
			for _, ev := range resp.Events {
				if ev.Type != clientv3.EventTypePut {
					continue
				}
				v, err := strconv.ParseInt(string(ev.Kv.Value), 10, 64)
				if err != nil {
					h.t.Errorf("master cursor %q is not a decimal event id", ev.Kv.Value)
					continue
				}
				h.mu.Lock()
				h.commits = append(h.commits, v)
				h.mu.Unlock()
			}
		}
	}()
}

// checkCommitsMonotonic fails the test if the committed cursor ever went down
// (allowed only across an explicit reset, which the caller excludes by index).
func (h *harness) checkCommitsMonotonic(from int) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := from + 1; i < len(h.commits); i++ {
		if h.commits[i] < h.commits[i-1] {
			h.t.Errorf("committed master cursor went down: %d then %d (all commits: %v)", h.commits[i-1], h.commits[i], h.commits)
		}
	}
}

type memberOpts struct {
	password string              // FE password; default the right one
	poll     time.Duration       // default the harness's
	link     *etcdpartition.Link // reach etcd through this link
	leaseTTL time.Duration       // default the harness's
	// gateGrace is how long a master keeps the role with its FE unhealthy;
	// default 1s.
	gateGrace time.Duration
	// publishStatus: the member publishes its status key, as `hmssync run` does.
	publishStatus bool
	// stuckAfter is the agent's StuckAfter (/livez); default the agent's own.
	stuckAfter time.Duration
	// wrapStore, if set, stands between the member and its cursor store.
	wrapStore func(*cursorstore.Store) agent.CursorStore
	// hmsURI is the metastore the member reads; default the harness's.
	hmsURI string
}

type member struct {
	h      *harness
	i      int
	name   string
	fe     *fetest.Server
	cli    *clientv3.Client
	el     *election.Elector
	agent  *agent.Agent
	hc     *hms.Client
	logs   *observer.ObservedLogs
	http   *httptest.Server
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs sidecar i (0..2) beside FE i.
func (h *harness) start(i int, mo memberOpts) *member {
	t := h.t
	t.Helper()
	if mo.password == "" {
		mo.password = fePassword
	}
	if mo.poll == 0 {
		mo.poll = h.o.poll
	}
	if mo.leaseTTL == 0 {
		mo.leaseTTL = h.o.leaseTTL
	}
	if mo.gateGrace == 0 {
		mo.gateGrace = time.Second
	}
	name := fmt.Sprintf("m%d", i)
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	if testing.Verbose() {
		log = zap.New(zapcore.NewTee(core, zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(testWriter{t}), zapcore.InfoLevel))).With(zap.String("m", name))
	}
	var cli *clientv3.Client
	if mo.link != nil {
		cli = mo.link.Client(t)
	} else {
		var err error
		cli, err = h.etcd.Server.Client()
		if err != nil {
			t.Fatal(err)
		}
	}
	fe := h.fes[i]
	ap, err := applier.New(applier.Config{Dialect: h.o.dialect, URL: fe.URL, User: "root", Password: mo.password, Timeout: 2 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	health := agent.NewFEHealth(ap, 100*time.Millisecond, time.Second, log)
	reqTimeout := mo.leaseTTL/3 - 100*time.Millisecond
	el, err := election.New(election.Config{
		Client: cli, Prefix: etcdPrefix + "/" + testCluster + "/election", Name: name,
		LeaseTTL: mo.leaseTTL, RequestTimeout: reqTimeout,
		CanLead: health.Healthy, GateGrace: mo.gateGrace, GateInterval: 50 * time.Millisecond, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	store := cursorstore.New(cli, etcdPrefix, testCluster, reqTimeout, log)
	// The member's name as set_ugi user tells its reads apart in the fake
	// metastore's fetch log.
	if mo.hmsURI == "" {
		mo.hmsURI = h.hms.URI()
	}
	hc, err := hms.NewClient(hms.ClientConfig{URIs: []string{mo.hmsURI}, UGIUser: name, DialTimeout: time.Second, CallTimeout: 2 * time.Second,
		Kerberos: h.o.kerberos, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	var cs agent.CursorStore = store
	if mo.wrapStore != nil {
		cs = mo.wrapStore(store)
	}
	var status agent.StatusPublisher
	if mo.publishStatus {
		p, err := store.NewStatusPublisher(name, 10*time.Second, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		status = p
	}
	a, err := agent.New(agent.Config{
		Cluster: testCluster, Member: name, FEURL: fe.URL, Applier: ap, FEHealth: health,
		Elector: el, Store: cs, Status: status, StatusInterval: 50 * time.Millisecond,
		Catalogs: []agent.Catalog{{
			Name: testCatalog, Source: hc, Decoder: message.NewDecoder(""), BatchSize: h.o.batch,
			PollInterval: mo.poll, CallTimeout: 2 * time.Second, SkipEventTypes: h.o.skip,
			Include: anchoredPatterns(h.o.include), NoPushdown: h.o.noPushdown,
		}},
		Retry:      agent.Retry{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, AuthInterval: 300 * time.Millisecond},
		StuckAfter: mo.stuckAfter,
		Logger:     log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{h: h, i: i, name: name, fe: fe, cli: cli, el: el, agent: a, hc: hc, logs: logs, cancel: cancel, done: make(chan struct{})}
	m.http = httptest.NewServer(a.Handler(nil))
	go func() {
		defer close(m.done)
		a.Run(ctx, 3*time.Second)
	}()
	h.mu.Lock()
	h.members = append(h.members, m)
	h.mu.Unlock()
	t.Cleanup(m.stop)
	return m
}

// stop is SIGTERM: the sidecar finishes, resigns if master, and exits.
func (m *member) stop() {
	select {
	case <-m.done:
		return
	default:
	}
	m.cancel()
	<-m.done
	m.http.Close()
	_ = m.hc.Close()
	if m.cli != nil {
		_ = m.cli.Close()
	}
	m.h.mu.Lock()
	for i, x := range m.h.members {
		if x == m {
			m.h.members = append(m.h.members[:i], m.h.members[i+1:]...)
			break
		}
	}
	m.h.mu.Unlock()
}

// crash kills the sidecar without a goodbye: its etcd connection dies first, so it
// cannot resign and its lease must expire before another member leads.
func (m *member) crash() {
	_ = m.cli.Close()
	m.stop()
}

func (m *member) isMaster() bool {
	_, ok := m.el.Current()
	return ok
}

func (m *member) status() agent.Status { return m.agent.Status() }

func (m *member) catalogStatus() agent.CatalogStatus { return m.agent.Status().Catalogs[0] }

func (m *member) get(path string) (int, string) {
	resp, err := http.Get(m.http.URL + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of one series from /metrics ("" labels: the first
// series of that name), or 0 when absent.
func (m *member) metric(name string, labels ...string) float64 {
	_, body := m.get("/metrics")
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(name):]
		if rest != "" && rest[0] != '{' && rest[0] != ' ' {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		return v
	}
	return 0
}

// fullRefreshes counts the full refreshes FE i received.
// allFullRefreshes is fullRefreshes of each of the three members.
func (h *harness) allFullRefreshes() []int {
	return []int{h.fullRefreshes(0), h.fullRefreshes(1), h.fullRefreshes(2)}
}

// expectFullRefreshesSince fails the test unless each member's FE got exactly
// want full refreshes since base (from allFullRefreshes).
func (h *harness) expectFullRefreshesSince(base []int, want int, what string) {
	h.t.Helper()
	for i := range base {
		if got := h.fullRefreshes(i) - base[i]; got != want {
			h.t.Errorf("%s: FE %d got %d full refreshes since the start of the scenario, want %d", what, i, got, want)
		}
	}
}

func (h *harness) fullRefreshes(i int) int {
	if h.o.dialect == "doris" {
		n := 0
		for _, s := range h.feCluster.Statements() {
			if strings.HasPrefix(s, "REFRESH CATALOG") && !strings.Contains(s, "invalid_cache") {
				n++
			}
		}
		return n
	}
	n := 0
	for _, b := range h.fes[i].Changes() {
		if b.FullRefresh {
			n++
		}
	}
	return n
}

// master waits for exactly one running member to be master and returns it.
// startConverged writes a small history, starts three sidecars with default
// options, waits until every FE converged, and returns the master: the opening
// of most scenarios.
func (h *harness) startConverged() *member {
	h.t.Helper()
	h.churn(5)
	for i := 0; i < 3; i++ {
		h.start(i, memberOpts{})
	}
	h.awaitConverged(converge)
	return h.master(5 * time.Second)
}

func (h *harness) master(timeout time.Duration) *member {
	h.t.Helper()
	var found *member
	await(h.t, timeout, "exactly one master", func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		var ms []string
		found = nil
		for _, m := range h.members {
			if m.isMaster() {
				found = m
				ms = append(ms, m.name)
			}
		}
		return len(ms) == 1, fmt.Sprintf("masters: %v", ms)
	})
	return found
}

// masterCursor reads the committed cursor (-1 when absent).
func (h *harness) masterCursor() int64 {
	h.t.Helper()
	v, _ := h.masterCursorRev()
	return v
}

// converged reports whether every FE holds the metastore's truth and, for the
// native dialect, has applied up to the metastore's current event id.
func (h *harness) converged(fes ...int) (bool, string) {
	want := h.hms.Snapshot()
	cur := h.hms.CurrentEventID()
	if h.o.dialect == "doris" {
		if d := fetest.Diff(want, h.feCluster.Snapshot(testCatalog)); d != "" {
			return false, "doris cluster: " + d
		}
		if mc := h.masterCursor(); mc != cur {
			return false, fmt.Sprintf("master cursor %d, metastore at %d", mc, cur)
		}
		return true, ""
	}
	if len(fes) == 0 {
		fes = []int{0, 1, 2}
	}
	for _, i := range fes {
		fe := h.fes[i]
		if got := fe.AppliedEventID(testCatalog); got != cur {
			return false, fmt.Sprintf("FE %d applied up to %d, metastore at %d", i, got, cur)
		}
		if d := fetest.Diff(want, fe.Snapshot(testCatalog)); d != "" {
			return false, fmt.Sprintf("FE %d: %s", i, d)
		}
	}
	return true, ""
}

func (h *harness) awaitConverged(timeout time.Duration, fes ...int) {
	h.t.Helper()
	await(h.t, timeout, "every FE converged to the metastore", func() (bool, string) {
		if ok, why := h.converged(fes...); !ok {
			return false, why
		}
		// The sidecars know it too: an FE can hold a batch whose answer its
		// sidecar has not read yet.
		cur := h.hms.CurrentEventID()
		for _, m := range h.running() {
			if !slices.Contains(fes, m.i) && len(fes) > 0 {
				continue
			}
			if c := m.catalogStatus().Cursor; c != cur {
				return false, fmt.Sprintf("%s's cursor at %d, metastore at %d", m.name, c, cur)
			}
		}
		return true, ""
	})
}

// await polls cond until it holds or the deadline passes: conditions, never sleeps,
// synchronise the tests.
func await(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testutil.Await(t, timeout, what, cond)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// churn appends n events through the fake metastore's own mutations (a workload
// with a fresh seed, so that it owns fresh databases).
func (h *harness) churn(n int) {
	h.t.Helper()
	h.seed++
	w := hmstest.Workload{Seed: h.seed, Databases: 1, Tables: 3, Events: n}
	if err := w.Run(context.Background(), h.hms); err != nil {
		h.t.Fatalf("churn %d events: %v", n, err)
	}
}

// runWorkload runs a steady workload in the background until the returned stop is
// called.
func (h *harness) runWorkload(rate float64) (stop func()) {
	h.seed++
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	w := hmstest.Workload{Seed: h.seed, Rate: rate}
	go func() { done <- w.Run(ctx, h.hms) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			h.t.Errorf("workload: %v", err)
		}
	}
}

// awaitEvents waits until the metastore's log reaches id.
func (h *harness) awaitEvents(id int64) {
	h.t.Helper()
	await(h.t, 30*time.Second, fmt.Sprintf("metastore at event %d", id), func() (bool, string) {
		cur := h.hms.CurrentEventID()
		return cur >= id, fmt.Sprintf("at %d", cur)
	})
}

// anchoredPatterns compiles include or exclude patterns as the configuration
// does (internal/config.CompileFull): matching the whole subject.
func anchoredPatterns(ps []string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range ps {
		out = append(out, regexp.MustCompile(`^(?:`+p+`)$`))
	}
	return out
}
