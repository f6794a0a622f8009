package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
)

// benchCatalog is the one catalog the bench synchronises.
const benchCatalog = "hive"

// benchMembers is the topology's size: one master and two followers.
const benchMembers = 3

// benchEnv is what every run of one invocation shares.
type benchEnv struct {
	o    Options
	etcd []string // embedded etcd's endpoints
	cli  *clientv3.Client
	tmpl *benchTemplate
	dir  string // scratch directory for configurations and logs
	say  func(format string, args ...any)
}

// runSample is what one run of one dialect measured.
type runSample struct {
	leader string

	// Drain of the backlog.
	drainEvents          int64
	drainMasterEPS       float64
	drainFollowerEPS     []float64 // per follower
	drainLagMS           []float64 // every follower × master commit of the drain
	drainBatches         int
	refreshStatements    int // doris: REFRESH statements during the drain
	feRequests           int // native: batches the master's FE received during the drain
	affectedTables       int // Σ over batches of the tables the batch touched
	affectedObjects      int // … of the tables, databases whose table list changed and the catalog's database list
	etcdRevs             int
	etcdPuts             map[string]int
	cpuPer100k           []float64 // per member, drain phase
	peakRSS              []int64   // per member, whole run
	memberNames          []string
	masterIndex          int
	steadyLatencyMS      []float64 // every event of the steady phase
	steadyLagMS          []float64 // every follower × master commit of the steady phase
	steadyEvents         int64
	steadyRate           float64
	steadyLatencySubject string
	idleCallsPerMin      float64 // metastore polls and fetches per minute of an idle log
	httpAddrs            []string
	lastEventID          int64              // the last event appended
	memberCursors        []int64            // each member's cursor at the end
	feApplied            []int64            // native: each FE's applied event id at the end
	stageMS              map[string]float64 // master's mean ms per batch in each stage, drain
	steadyStageMS        map[string]float64 // the same over the steady phase
	benchCPUPer100k      float64            // the bench process (fakes, etcd): CPU s per 100k drained events
}

// runTopology runs one dialect's topology once: a fresh fake metastore, three
// fake FEs, three sidecar processes on the shared etcd; first the backlog
// drain, then the steady phase, then the idle one.
func (env *benchEnv) runTopology(ctx context.Context, dialect string, run int) (s runSample, err error) {
	t := &topology{env: env, o: env.o, dialect: dialect, s: &s,
		label: fmt.Sprintf("run %d/%d %s", run, env.o.Runs, dialect), cluster: fmt.Sprintf("bench-%s-%d", dialect, run)}
	t.hms = hmstest.NewServer()
	defer t.hms.Close()
	defer t.startFEs()()

	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	if err := t.observe(octx); err != nil {
		return s, err
	}
	defer func() {
		for _, c := range t.children {
			if c == nil {
				continue
			}
			if serr := c.stop(15 * time.Second); serr != nil && err == nil {
				err = fmt.Errorf("%s: %w", t.label, serr)
			}
		}
		if err != nil {
			err = fmt.Errorf("%w%s", err, childLogs(t.children))
		}
	}()
	if err := t.startSidecars(run); err != nil {
		return s, err
	}
	if err := t.awaitMaster(ctx); err != nil {
		return s, err
	}
	n, err := t.drain(ctx)
	if err != nil {
		return s, err
	}
	last, err := t.steady(ctx, n)
	if err != nil {
		return s, err
	}
	if t.o.Idle > 0 {
		s.idleCallsPerMin, err = idleMetastoreCalls(ctx, t.hms, t.o)
		if err != nil {
			return s, fmt.Errorf("%s: %w", t.label, err)
		}
		env.say("%s: idle: %.1f metastore calls per minute", t.label, s.idleCallsPerMin)
	}
	return s, t.finish(ctx, last)
}

// topology is one run of one dialect: what runTopology starts and measures.
type topology struct {
	env            *benchEnv
	o              Options
	dialect, label string
	cluster, root  string // the cluster's name and its etcd subtree
	hms            *hmstest.Server
	fes            []*fetest.Server
	obs            *etcdObserver
	children       []*benchChild
	poller         *fePoller // native: the FEs' applied ids during the steady phase
	s              *runSample
}

// startFEs starts the fake FEs (one Doris-like cluster, or independent native
// ones) answering after o.FELatency; the result closes them.
func (t *topology) startFEs() (closeFEs func()) {
	var closers []func()
	if t.dialect == "doris" {
		cl := fetest.NewCluster(benchMembers, fetest.Options{})
		closers = append(closers, cl.Close)
		t.fes = cl.Servers()
	} else {
		for range benchMembers {
			fe := fetest.NewServer(fetest.Options{})
			closers = append(closers, fe.Close)
			t.fes = append(t.fes, fe)
		}
	}
	if t.o.FELatency > 0 {
		for _, fe := range t.fes {
			fe.InjectFault(fetest.Fault{Delay: t.o.FELatency})
		}
	}
	return func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
}

// observe starts watching the cluster's etcd subtree from the next revision,
// until ctx ends.
func (t *topology) observe(ctx context.Context) error {
	root, err := cursorstore.ClusterPrefix(cursorstore.DefaultPrefix, t.cluster)
	if err != nil {
		return err
	}
	t.root = root
	gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
	resp, err := t.env.cli.Get(gctx, root+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	gcancel()
	if err != nil {
		return fmt.Errorf("%s: read etcd's revision: %w", t.label, err)
	}
	t.obs = observeEtcd(ctx, t.env.cli, root, benchCatalog, resp.Header.Revision+1)
	return nil
}

// startSidecars starts one sidecar process per FE; the caller stops them.
func (t *topology) startSidecars(run int) error {
	runDir := filepath.Join(t.env.dir, t.cluster)
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return err
	}
	t.children = make([]*benchChild, benchMembers)
	for i := range t.children {
		cfg := benchSidecarConfig(t.cluster, fmt.Sprintf("sidecar-%d", i+1), t.env.etcd, t.fes[i].URL, t.dialect, t.hms.URI(), t.o)
		var err error
		if cfg.HTTP.Listen, err = freeAddress(); err != nil {
			return err
		}
		t.s.httpAddrs = append(t.s.httpAddrs, cfg.HTTP.Listen)
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("%s: sidecar configuration: %w", t.label, err)
		}
		prefix := ""
		if t.o.ProfileDir != "" {
			prefix = filepath.Join(t.o.ProfileDir, fmt.Sprintf("%s-run%d-%s", t.dialect, run, cfg.Member))
		}
		if t.children[i], err = startBenchChild(runDir, t.o.SidecarArgs, cfg, prefix); err != nil {
			return err
		}
		t.s.memberNames = append(t.s.memberNames, cfg.Member)
	}
	return nil
}

// alive is nil while every sidecar runs and the etcd watch holds.
func (t *topology) alive() error {
	for _, c := range t.children {
		if c.exited() {
			return fmt.Errorf("sidecar %s exited early: %v", c.name, c.waitErr)
		}
	}
	return t.obs.watchErr()
}

// atLeast reports whether the master cursor and every member's cursor reached v.
func (t *topology) atLeast(v int64) bool {
	if t.obs.masterTrack().latest() < v {
		return false
	}
	for _, m := range t.s.memberNames {
		if t.obs.memberTrack(m).latest() < v {
			return false
		}
	}
	return true
}

// awaitMaster waits for the set-up (on the empty metastore every member
// full-refreshes at event 0) and finds the master.
func (t *topology) awaitMaster(ctx context.Context) error {
	s := t.s
	if err := benchWait(ctx, 60*time.Second, "the sidecars' first full refresh (every cursor at 0)", func() (bool, error) {
		return t.atLeast(0), t.alive()
	}); err != nil {
		return fmt.Errorf("%s: %w", t.label, err)
	}
	var err error
	if s.leader, err = electionLeader(ctx, t.env.cli, t.root); err != nil {
		return fmt.Errorf("%s: %w", t.label, err)
	}
	s.masterIndex = -1
	for i, m := range s.memberNames {
		if m == s.leader {
			s.masterIndex = i
		}
	}
	if s.masterIndex < 0 {
		return fmt.Errorf("%s: the election names %q, not one of the sidecars", t.label, s.leader)
	}
	t.env.say("%s: sidecars up, %s is master", t.label, s.leader)
	return nil
}

// drain lands the whole template in the log at once, waits until every member
// applied it and records the drain's figures; n is the number of events.
func (t *topology) drain(ctx context.Context) (n int64, err error) {
	s, label, fes := t.s, t.label, t.fes
	cpu0, err := childrenCPU(t.children)
	if err != nil {
		return 0, err
	}
	counts0 := t.obs.counts()
	self0, err := processCPU(os.Getpid())
	if err != nil {
		return 0, err
	}
	stages0, err := scrapeStages(ctx, s.httpAddrs[s.masterIndex])
	if err != nil {
		return 0, fmt.Errorf("%s: %w", label, err)
	}
	stmts0, reqs0 := len(fes[0].Statements()), len(fes[s.masterIndex].Changes())
	n = int64(len(t.env.tmpl.events))
	t0 := time.Now()
	t.hms.Append(t.env.tmpl.events...)
	lastSay := time.Now()
	err = benchWait(ctx, drainTimeout(n), fmt.Sprintf("the drain of %d events", n), func() (bool, error) {
		if time.Since(lastSay) >= 2*time.Second {
			lastSay = time.Now()
			var fs []string
			for i, m := range s.memberNames {
				if i != s.masterIndex {
					fs = append(fs, fmt.Sprint(max(t.obs.memberTrack(m).latest(), 0)))
				}
			}
			t.env.say("%s: draining: master %d/%d, followers %s (%.0fs)", label, max(t.obs.masterTrack().latest(), 0), n, strings.Join(fs, ", "), time.Since(t0).Seconds())
		}
		return t.atLeast(n), t.alive()
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", label, err)
	}
	cpu1, err := childrenCPU(t.children)
	if err != nil {
		return 0, err
	}
	counts1 := t.obs.counts()
	self1, err := processCPU(os.Getpid())
	if err != nil {
		return 0, err
	}
	stages1, err := scrapeStages(ctx, s.httpAddrs[s.masterIndex])
	if err != nil {
		return 0, fmt.Errorf("%s: %w", label, err)
	}
	s.stageMS = stages1.perBatchMS(stages0)
	s.benchCPUPer100k = (self1 - self0).Seconds() / float64(n) * 100000
	if t.dialect == "doris" {
		for _, st := range fes[0].Statements()[stmts0:] {
			if strings.HasPrefix(st, "REFRESH ") {
				s.refreshStatements++
			}
		}
	}
	s.feRequests = len(fes[s.masterIndex].Changes()) - reqs0
	s.drainEvents = n
	s.etcdRevs = counts1.revs - counts0.revs
	s.etcdPuts = map[string]int{}
	for k, v := range counts1.puts {
		s.etcdPuts[k] = v - counts0.puts[k]
	}
	for i := range t.children {
		s.cpuPer100k = append(s.cpuPer100k, (cpu1[i]-cpu0[i]).Seconds()/float64(n)*100000)
	}
	if err := s.drainFigures(t.obs, t.env.tmpl, 0, n, t0); err != nil {
		return 0, fmt.Errorf("%s: %w", label, err)
	}
	t.env.say("%s: drained %d events: master %.0f events/s, slowest follower %.0f events/s, %d batches; master per fetch %.1f ms, decode (per fetch) %.1f ms, apply %.1f ms, commit %.1f ms; wall per batch %.1f ms",
		label, n, s.drainMasterEPS, minOf(s.drainFollowerEPS), s.drainBatches,
		s.stageMS["fetch"], s.stageMS["decode"], s.stageMS["apply"], s.stageMS["commit"], 1000*float64(n)/float64(s.drainBatches)/s.drainMasterEPS)
	return n, nil
}

// steady appends events at o.Rate for o.Steady after the drained n, waits
// until every member and FE has the last one and records the latencies; last
// is the last event appended.
func (t *topology) steady(ctx context.Context, n int64) (last int64, err error) {
	s, label, o := t.s, t.label, t.o
	pctx, pcancel := context.WithCancel(ctx)
	pollerDone := func() {}
	defer func() { pcancel(); pollerDone() }()
	if t.dialect == "native" {
		t.poller, pollerDone = pollFEs(pctx, t.fes, benchCatalog, time.Millisecond)
	}
	steadyStages0, err := scrapeStages(ctx, s.httpAddrs[s.masterIndex])
	if err != nil {
		return 0, fmt.Errorf("%s: %w", label, err)
	}
	steadyStart := time.Now()
	marks := appendAtRate(ctx, t.hms, t.env.tmpl.events, o.Rate, o.Steady)
	if len(marks) == 0 {
		return 0, fmt.Errorf("%s: the steady phase appended nothing (--duration %s too short for --rate %g?)", label, o.Steady, o.Rate)
	}
	last = marks[len(marks)-1].last
	s.steadyEvents = last - n
	s.steadyRate = float64(s.steadyEvents) / marks[len(marks)-1].at.Sub(steadyStart).Seconds()
	caughtUp := func() (bool, error) {
		if !t.atLeast(last) {
			return false, t.alive()
		}
		if t.poller != nil {
			for i := range t.fes {
				if t.poller.track(i).latest() < last {
					return false, t.alive()
				}
			}
		}
		return true, t.alive()
	}
	if err := benchWait(ctx, 60*time.Second+2*o.Poll, "the steady phase's last event on every member and FE", caughtUp); err != nil {
		return 0, fmt.Errorf("%s: %w", label, err)
	}
	pcancel()
	steadyStages1, err := scrapeStages(ctx, s.httpAddrs[s.masterIndex])
	if err != nil {
		return 0, fmt.Errorf("%s: %w", label, err)
	}
	s.steadyStageMS = steadyStages1.perBatchMS(steadyStages0)
	s.steadyFigures(t.obs, t.poller, marks, n)
	t.env.say("%s: steady %d events at %.0f/s: latency p50 %.0f ms, p99 %.0f ms; follower lag p99 %.0f ms",
		label, s.steadyEvents, s.steadyRate, percentile(s.steadyLatencyMS, 0.5), percentile(s.steadyLatencyMS, 0.99), percentile(s.steadyLagMS, 0.99))
	return last, nil
}

// finish checks that the master held its role throughout and records where
// every member and FE ended and each sidecar's peak RSS.
func (t *topology) finish(ctx context.Context, last int64) error {
	s := t.s
	leaderNow, err := electionLeader(ctx, t.env.cli, t.root)
	if err != nil {
		return fmt.Errorf("%s: %w", t.label, err)
	}
	if leaderNow != s.leader {
		return fmt.Errorf("%s: the master changed during the run (%s, then %s): the figures would mix roles", t.label, s.leader, leaderNow)
	}
	s.lastEventID = last
	for _, m := range s.memberNames {
		s.memberCursors = append(s.memberCursors, t.obs.memberTrack(m).latest())
	}
	if t.poller != nil {
		for i := range t.fes {
			s.feApplied = append(s.feApplied, t.poller.track(i).latest())
		}
	}
	for _, c := range t.children {
		rss, err := processPeakRSS(c.pid())
		if err != nil {
			return err
		}
		s.peakRSS = append(s.peakRSS, rss)
	}
	return nil
}

// drainFigures derives the drain's rates, batches, lags and touched objects from
// the cursor moves of events (from, to].
func (s *runSample) drainFigures(obs *etcdObserver, tmpl *benchTemplate, from, to int64, appended time.Time) error {
	commits, start, events, err := drainCommits(obs.masterTrack(), from, to, appended)
	if err != nil {
		return err
	}
	s.drainBatches = len(commits)
	end := commits[len(commits)-1]
	s.drainMasterEPS = perSecond(events, end.at.Sub(start))
	for i, m := range s.memberNames {
		if i == s.masterIndex {
			continue
		}
		ft := obs.memberTrack(m)
		at, ok := ft.reached(to)
		if !ok {
			return fmt.Errorf("follower %s never reached %d", m, to)
		}
		fstart, fevents := start, events
		if !at.After(fstart) {
			fstart, fevents = appended, to-from
		}
		s.drainFollowerEPS = append(s.drainFollowerEPS, perSecond(fevents, at.Sub(fstart)))
		s.drainLagMS = append(s.drainLagMS, lagsMS(commits, ft)...)
	}
	prev := from
	for _, c := range commits {
		tables, objects := tmpl.affected(prev, c.value)
		s.affectedTables += tables
		s.affectedObjects += objects
		prev = c.value
	}
	return nil
}

// drainCommits are the master's commits of the drain of (from, to] in mt, and
// what its rate is measured over: events from start to the last commit. The
// rate runs from the master's first commit: before it the master may still
// have been waiting out its poll interval (or starting), which says nothing
// about its speed. A drain done in one batch has no interval, and the watch may
// deliver two moves of a tiny drain in one response (at one time): then the
// rate is measured from fallback (the append; a lower bound), over all the
// events.
func drainCommits(mt cursorTrack, from, to int64, fallback time.Time) (commits cursorTrack, start time.Time, events int64, err error) {
	for _, m := range mt {
		if m.value > from && m.value <= to {
			commits = append(commits, m)
		}
	}
	if len(commits) == 0 {
		return nil, time.Time{}, 0, errors.New("no master commit observed during the drain")
	}
	first, end := commits[0], commits[len(commits)-1]
	start, events = first.at, to-first.value
	if len(commits) == 1 || !end.at.After(first.at) {
		start, events = fallback, to-from
	}
	return commits, start, events, nil
}

// steadyFigures derives the steady phase's latencies (append → applied on every
// FE) and the followers' lags after each master commit beyond after.
func (s *runSample) steadyFigures(obs *etcdObserver, poller *fePoller, marks []appendMark, after int64) {
	var applied []cursorTrack
	if poller != nil {
		// Native: each FE's own account of what it applied.
		s.steadyLatencySubject = "applied on all three FEs (each FE's applied event id, sampled every 1 ms)"
		for i := range benchMembers {
			applied = append(applied, poller.track(i))
		}
	} else {
		// Doris: one cluster; the master's commit follows its REFRESH.
		s.steadyLatencySubject = "refreshed on the FE cluster (the master's commit, which follows its REFRESH statements)"
		applied = append(applied, obs.masterTrack())
	}
	for _, mk := range marks {
		for id := mk.first; id <= mk.last; id++ {
			var latest time.Time
			for _, t := range applied {
				at, _ := t.reached(id)
				if at.After(latest) {
					latest = at
				}
			}
			s.steadyLatencyMS = append(s.steadyLatencyMS, millis(latest.Sub(mk.at)))
		}
	}
	var commits cursorTrack
	for _, m := range obs.masterTrack() {
		if m.value > after {
			commits = append(commits, m)
		}
	}
	for i, m := range s.memberNames {
		if i != s.masterIndex {
			s.steadyLagMS = append(s.steadyLagMS, lagsMS(commits, obs.memberTrack(m))...)
		}
	}
}

// lagsMS is, for each master commit, how long after it the follower's cursor
// reached the committed value.
func lagsMS(commits, follower cursorTrack) []float64 {
	var out []float64
	for _, c := range commits {
		if at, ok := follower.reached(c.value); ok {
			out = append(out, millis(at.Sub(c.at)))
		}
	}
	return out
}

// benchSidecarConfig is one sidecar's configuration: the production defaults but
// for the addresses, the batch size and the poll interval the bench was given,
// and quiet logs.
func benchSidecarConfig(cluster, member string, etcd []string, feURL, dialect, hmsURI string, o Options) config.Config {
	cfg := config.Default()
	cfg.Cluster = cluster
	cfg.Member = member
	cfg.Etcd.Endpoints = etcd
	cfg.FE.URL = feURL
	cfg.FE.Dialect = dialect
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Log = config.Log{Level: "warn", Format: "json"}
	cat := config.CatalogDefaults(benchCatalog)
	cat.HMSURIs = []string{hmsURI}
	if o.BatchSize != 0 {
		cat.BatchSize = o.BatchSize
	}
	if o.Poll != 0 {
		cat.PollInterval = o.Poll
	}
	if o.BusyPoll != 0 {
		cat.BusyPoll = o.BusyPoll
	}
	cfg.Catalogs = []config.Catalog{cat}
	return cfg
}

// electionLeader names the member holding the election: the candidate key with
// the lowest create revision (etcd's election recipe).
func electionLeader(ctx context.Context, cli *clientv3.Client, root string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, root+"/election/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil {
		return "", fmt.Errorf("read the election from etcd: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", errors.New("no sidecar holds the election")
	}
	return string(resp.Kvs[0].Value), nil
}

// appendMark is a group of events appended together at one time.
type appendMark struct {
	first, last int64
	at          time.Time
}

// appendAtRate appends events (cycling through evs, which get new ids) at rate
// per second for d, in small groups every 2 ms, and records when each group was
// appended.
func appendAtRate(ctx context.Context, srv *hmstest.Server, evs []hms.Event, rate float64, d time.Duration) []appendMark {
	var marks []appendMark
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	sent, k := 0, 0
	for {
		now := time.Now()
		el := now.Sub(start)
		if el >= d {
			return marks
		}
		if due := int(rate*el.Seconds()) - sent; due > 0 {
			group := make([]hms.Event, due)
			for i := range group {
				group[i] = evs[k%len(evs)]
				k++
			}
			first, last := srv.Append(group...)
			marks = append(marks, appendMark{first, last, now})
			sent += due
		}
		select {
		case <-ctx.Done():
			return marks
		case <-t.C:
		}
	}
}

// childrenCPU reads every child's CPU time.
func childrenCPU(children []*benchChild) ([]time.Duration, error) {
	out := make([]time.Duration, len(children))
	for i, c := range children {
		d, err := processCPU(c.pid())
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// childLogs is the tail of each child's log, for a failed run's error.
func childLogs(children []*benchChild) string {
	var b strings.Builder
	for _, c := range children {
		if c == nil {
			continue
		}
		if tail := strings.TrimSpace(c.logTail()); tail != "" {
			fmt.Fprintf(&b, "\n--- %s log (%s), last lines:\n%s", c.name, c.logPath, tail)
		}
	}
	return b.String()
}

// drainTimeout bounds a drain generously: at 200 events/s, a tenth of the goal,
// and at least two minutes.
func drainTimeout(n int64) time.Duration {
	return max(2*time.Minute, time.Duration(n/200)*time.Second)
}

// waitFor polls cond every 10 ms until it holds, fails, or timeout passes.
func benchWait(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not done after %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

func perSecond(events int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(events) / d.Seconds()
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// idleMetastoreCalls counts the calls the sidecars make to the metastore while
// its log is idle, per minute: from two poll intervals after the steady phase
// ended (the master's polls after its last events come closer together and
// back off to the poll interval within less than that) for o.Idle. The db uuid
// is read once per connection and not counted.
func idleMetastoreCalls(ctx context.Context, srv *hmstest.Server, o Options) (float64, error) {
	calls := func() int {
		return srv.Calls("get_current_notificationEventId") + srv.Calls("get_next_notification")
	}
	wait := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}
	if err := wait(2 * o.Poll); err != nil {
		return 0, err
	}
	before := calls()
	if err := wait(o.Idle); err != nil {
		return 0, err
	}
	return float64(calls()-before) / o.Idle.Minutes(), nil
}
