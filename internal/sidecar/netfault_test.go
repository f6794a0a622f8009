package sidecar_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/tests/v3/framework/integration"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
	"github.com/hmssync/hmssync/internal/testutil"
	"github.com/hmssync/hmssync/internal/testutil/etcdpartition"
)

// The network-fault tests run three real sidecars (sidecar.Run, native
// dialect, each with its own fake FE) against a 3-member etcd cluster
// (etcd's integration framework, election timeout 100 ms) and one fake
// metastore. Every sidecar reaches every etcd member, and the metastore,
// through a link of its own, so that one sidecar can be cut off from one
// member, from etcd, or from everything, while the others keep their view.

const (
	netLeaseTTL       = 3 * time.Second
	netRequestTimeout = 900 * time.Millisecond // below lease_ttl / 3
	netCatalog        = "hive"
	netCluster        = "net"
)

type netSidecar struct {
	name      string
	etcdLinks []*etcdpartition.Link // one per etcd member, in member order
	hmsLink   *etcdpartition.Link
	fe        *fetest.Server
	cancel    context.CancelFunc
	exited    chan struct{}
	runErr    error
}

type netRig struct {
	t        *testing.T
	etcd     *integration.Cluster
	hms      *hmstest.Server
	sidecars []*netSidecar
	// store reads what the cluster holds, through the test's own client.
	store *cursorstore.Store
	cli   *clientv3.Client

	stopWorkload context.CancelFunc
	workloadDone chan struct{}

	opts netOpts
	// delays hold every sidecar's etcd traffic when opts.delayable.
	delays []*etcdpartition.Latency
}

// netOpts are the sidecars' etcd timings (dialTimeout 0: 2 s), whether their
// etcd traffic passes a Latency proxy, whether their logs are kept to errors
// (else warnings), and whether their FE checks have the production timings
// (fe.health_interval 5 s, fe.unhealthy_grace 30 s) rather than the tests'
// (100 ms, 1 s), under which a machine too busy to answer a ping for a second
// makes the master resign.
type netOpts struct {
	leaseTTL, requestTimeout, dialTimeout time.Duration
	delayable                             bool
	quiet                                 bool
	productionFE                          bool
}

// setEtcdRoundTrip adds rtt to every etcd round trip of every sidecar.
func (r *netRig) setEtcdRoundTrip(rtt time.Duration) {
	for _, d := range r.delays {
		d.SetRoundTrip(rtt)
	}
}

// clearLatency removes the added latency and spikes.
func (r *netRig) clearLatency() {
	for _, d := range r.delays {
		d.SetRoundTrip(0)
		d.SetSpikes(0, 0)
	}
}

// newNetRig starts etcd, the metastore with a workload of rate events per
// second, and three sidecars, and waits until they are in sync. Everything is
// stopped when the test ends.
func newNetRig(t *testing.T, rate float64) *netRig {
	return newNetRigWith(t, rate, netOpts{leaseTTL: netLeaseTTL, requestTimeout: netRequestTimeout})
}

func newNetRigWith(t *testing.T, rate float64, opts netOpts) *netRig {
	integration.BeforeTest(t)
	clus := integration.NewCluster(t, &integration.ClusterConfig{Size: 3, UseTCP: true})
	t.Cleanup(func() { clus.Terminate(t) })
	r := &netRig{t: t, etcd: clus, hms: hmstest.NewServer(), opts: opts}
	t.Cleanup(r.hms.Close)

	var eps []string
	for _, m := range clus.Members {
		eps = append(eps, m.GRPCURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	r.cli = cli
	r.store = cursorstore.New(cli, "/hmssync", netCluster, 2*time.Second, zap.NewNop())

	if err := (hmstest.Workload{Seed: 1, Databases: 2, Tables: 6, Events: 40}).Run(context.Background(), r.hms); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r.sidecars = append(r.sidecars, r.startSidecar(fmt.Sprintf("s%d", i+1)))
	}
	// Stopped before the links and etcd (t.Cleanup runs last-in first-out).
	t.Cleanup(r.stopAll)
	r.awaitInSync(30*time.Second, "all sidecars in sync at start")

	wctx, stop := context.WithCancel(context.Background())
	r.stopWorkload, r.workloadDone = stop, make(chan struct{})
	go func() {
		defer close(r.workloadDone)
		_ = hmstest.Workload{Seed: 2, Rate: rate, Databases: 2, Tables: 6}.Run(wctx, r.hms)
	}()
	return r
}

func (r *netRig) startSidecar(name string) *netSidecar {
	t := r.t
	s := &netSidecar{name: name, exited: make(chan struct{})}
	var eps []string
	for _, m := range r.etcd.Members {
		l := etcdpartition.New(t, m.GRPCURL)
		s.etcdLinks = append(s.etcdLinks, l)
		ep := l.Endpoint
		if r.opts.delayable {
			d := etcdpartition.NewLatency(t, l.Endpoint)
			r.delays = append(r.delays, d)
			ep = d.Endpoint
		}
		eps = append(eps, fmt.Sprintf("%q", ep))
	}
	s.hmsLink = etcdpartition.New(t, r.hms.URI())
	hmsURI := "thrift://" + strings.TrimPrefix(s.hmsLink.Endpoint, "http://")
	s.fe = fetest.NewServer(fetest.Options{Loader: func(context.Context, string) (fetest.Truth, error) { return r.hms.Snapshot(), nil }})
	t.Cleanup(s.fe.Close)

	feTimings := ", health_interval: 100ms, unhealthy_grace: 1s"
	if r.opts.productionFE {
		feTimings = ""
	}
	cfgFile := filepath.Join(t.TempDir(), name+".yaml")
	yaml := fmt.Sprintf(`
cluster: %s
member: %s
etcd: {endpoints: [%s], dial_timeout: %s, lease_ttl: %s, request_timeout: %s}
fe: {url: %q, dialect: native%s}
catalogs:
  - name: %s
    hms_uris: [%q]
    hms_timeout: 2s
    poll_interval: 50ms
http: {listen: %q}
shutdown_timeout: 4s
`, netCluster, name, strings.Join(eps, ", "), cmp.Or(r.opts.dialTimeout, 2*time.Second), r.opts.leaseTTL, r.opts.requestTimeout, s.fe.URL, feTimings, netCatalog, hmsURI, freeAddr(t))
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, sec, err := sidecar.LoadConfig(config.Sources{File: cfgFile, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	level := zap.WarnLevel
	if r.opts.quiet {
		level = zap.ErrorLevel
	}
	log := zaptest.NewLogger(t, zaptest.Level(level)).Named(name)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.exited)
		s.runErr = sidecar.Run(ctx, cfg, sec, log, zap.NewAtomicLevel(), "test")
	}()
	return s
}

func (r *netRig) stopAll() {
	if r.stopWorkload != nil {
		r.stopWorkload()
		<-r.workloadDone
	}
	var wg sync.WaitGroup
	for _, s := range r.sidecars {
		// A cut link would hold the sidecar's shutdown requests.
		r.healLinks(s)
		wg.Go(func() {
			s.cancel()
			<-s.exited
			if s.runErr != nil {
				r.t.Errorf("sidecar %s: %v", s.name, s.runErr)
			}
		})
	}
	wg.Wait()
	r.cli.Close()
}

func (r *netRig) healLinks(s *netSidecar) {
	for _, l := range s.etcdLinks {
		l.Heal()
	}
	s.hmsLink.Heal()
}

// read reads key (with opts) through the test's own client. The request
// requires a leader, so that a member cut off from the others refuses it and
// the client asks another: the test's view does not depend on the code under
// test.
func (r *netRig) read(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), 2*time.Second)
	defer cancel()
	return r.cli.Get(ctx, key, opts...)
}

// master is the election's leader as etcd holds it ("" when none).
func (r *netRig) master() string {
	resp, err := r.read(r.store.ElectionPrefix()+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func (r *netRig) sidecar(name string) *netSidecar {
	for _, s := range r.sidecars {
		if s.name == name {
			return s
		}
	}
	r.t.Fatalf("no sidecar %q", name)
	return nil
}

// masterCursor reads the committed cursor, -2 when etcd does not answer or
// it is unset.
func (r *netRig) masterCursor() int64 {
	resp, err := r.read(r.store.MasterCursorKey(netCatalog))
	if err != nil || len(resp.Kvs) == 0 {
		return -2
	}
	v, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return -2
	}
	return v
}

func (r *netRig) awaitMasterCursorAtMetastore(within time.Duration, what string) {
	testutil.Await(r.t, within, what, func() (bool, string) {
		cur, want := r.masterCursor(), r.hms.CurrentEventID()
		return cur == want, fmt.Sprintf("master cursor %d, metastore at %d", cur, want)
	})
}

func (r *netRig) awaitInSync(within time.Duration, what string) {
	testutil.Await(r.t, within, what, func() (bool, string) {
		want := r.hms.CurrentEventID()
		var behind []string
		for _, s := range r.sidecars {
			if got := s.fe.AppliedEventID(netCatalog); got != want {
				behind = append(behind, fmt.Sprintf("%s's FE at %d", s.name, got))
			}
		}
		if cur := r.masterCursor(); cur != want {
			behind = append(behind, fmt.Sprintf("master cursor %d", cur))
		}
		return len(behind) == 0, fmt.Sprintf("metastore at %d; %s", want, strings.Join(behind, ", "))
	})
}

// cursorTrace samples the master cursor every 20 ms until the returned stop is
// called (or the test ends), which returns the times at which it changed.
func (r *netRig) cursorTrace() (stop func() []time.Time) {
	out := make(chan []time.Time, 1)
	quit := make(chan struct{})
	var once sync.Once
	stop = func() []time.Time {
		once.Do(func() { close(quit) })
		return <-out
	}
	r.t.Cleanup(func() { once.Do(func() { close(quit); <-out }) })
	go func() {
		var changes []time.Time
		last := r.masterCursor()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				out <- changes
				return
			case <-tick.C:
			}
			if c := r.masterCursor(); c >= 0 && c != last {
				changes = append(changes, time.Now())
				last = c
			}
		}
	}()
	return stop
}

// longestGap is the longest time without a cursor change from start to end.
func longestGap(start, end time.Time, changes []time.Time) time.Duration {
	var gap time.Duration
	prev := start
	for _, c := range append(changes, end) {
		gap = max(gap, c.Sub(prev))
		prev = c
	}
	return gap
}

// The master reaches one etcd member only, and that member is cut off from the
// other two, so it has no leader. The master must give up its role, and the
// other sidecars, which still reach that member, must keep syncing at full pace
// with the two members that do have a leader: the master cursor advances at
// least every two lease TTLs (the hand-over included) and catches up with the
// metastore while the member stays cut off.
func TestMinorityEtcdMemberDoesNotStallTheCluster(t *testing.T) {
	r := newNetRig(t, 100)
	old := r.master()
	if old == "" {
		t.Fatal("no master after start")
	}
	// The member left alone is a raft follower, so the majority keeps its
	// leader and the fault is the minority alone.
	lead := r.etcd.WaitLeader(t)
	alone := (lead + 1) % 3
	others := []*integration.Member{r.etcd.Members[lead], r.etcd.Members[(lead+2)%3]}

	// The pace without a fault, for comparison.
	base := r.cursorTrace()
	time.Sleep(3 * time.Second)
	t.Logf("before the cut: %.1f master cursor changes/s", float64(len(base()))/3)

	stopTrace := r.cursorTrace()
	cutAt := time.Now()
	m := r.sidecar(old)
	for i, l := range m.etcdLinks {
		if i != alone {
			l.Cut()
		}
	}
	r.etcd.Members[alone].InjectPartition(t, others...)
	t.Logf("master %s reaches etcd member %d only; member %d cut off from the other two", old, alone, alone)

	// Events keep coming for 10 s, then the metastore is quiet and the master
	// cursor must reach its current id, all while the member stays cut off.
	time.Sleep(10 * time.Second)
	changes := stopTrace()
	cutEnd := time.Now()
	span := cutEnd.Sub(cutAt)
	gap := longestGap(cutAt, cutEnd, changes)
	t.Logf("during the cut, with events coming (%s): %d master cursor changes, %.1f/s; longest time without one %s; master now %q",
		span.Round(time.Millisecond), len(changes), float64(len(changes))/span.Seconds(), gap.Round(time.Millisecond), r.master())
	r.stopWorkload()
	<-r.workloadDone
	r.awaitMasterCursorAtMetastore(10*time.Second, "the master cursor at the metastore's current id while the member is cut off")
	if gap > 2*netLeaseTTL {
		t.Errorf("the master cursor stood still for %s during the cut; want at most 2 × lease TTL = %s", gap.Round(time.Millisecond), 2*netLeaseTTL)
	}
	if now := r.master(); now == old || now == "" {
		t.Errorf("master %q while %s reaches only a member without a leader; want another member", now, old)
	}

	r.etcd.Members[alone].RecoverPartition(t, others...)
	r.healLinks(m)
	r.awaitInSync(20*time.Second, "every FE at the metastore's current id after the heal")
}

// The master loses etcd but still reaches its metastore and FE. A successor
// takes over within the lease TTL and syncs on; the old master's FE stops
// moving once its lease is gone (it can neither commit nor read the master
// cursor), and after the heal it rejoins as a follower, without a restart.
func TestMasterCutFromEtcdOnly(t *testing.T) {
	r := newNetRig(t, 100)
	testMasterCut(t, r, false)
}

// The master loses etcd and the metastore (its FE stays beside it). A
// successor takes over and syncs on; after the heal the old master rejoins as
// a follower and its FE catches up.
func TestMasterCutFromEverything(t *testing.T) {
	r := newNetRig(t, 100)
	testMasterCut(t, r, true)
}

func testMasterCut(t *testing.T, r *netRig, metastoreToo bool) {
	old := r.master()
	if old == "" {
		t.Fatal("no master after start")
	}
	m := r.sidecar(old)
	stopTrace := r.cursorTrace()
	cutAt := time.Now()
	for _, l := range m.etcdLinks {
		l.Cut()
	}
	if metastoreToo {
		m.hmsLink.Cut()
	}
	testutil.Await(t, 2*netLeaseTTL, "a successor as master", func() (bool, string) {
		now := r.master()
		return now != "" && now != old, "master " + now
	})
	t.Logf("successor %s after %s", r.master(), time.Since(cutAt).Round(time.Millisecond))

	// Once its lease is gone (TTL, plus a second for the local estimate), the
	// old master's FE stands still.
	time.Sleep(netLeaseTTL + time.Second)
	frozen := m.fe.AppliedEventID(netCatalog)
	time.Sleep(3 * time.Second)
	if got := m.fe.AppliedEventID(netCatalog); got != frozen {
		t.Errorf("%s's FE moved from %d to %d while %s was cut from etcd and no longer master", old, frozen, got, old)
	}
	changes := stopTrace()
	span := time.Since(cutAt)
	gap := longestGap(cutAt, time.Now(), changes)
	t.Logf("during the cut, with events coming (%s): %d master cursor changes, longest time without one %s",
		span.Round(time.Millisecond), len(changes), gap.Round(time.Millisecond))
	r.stopWorkload()
	<-r.workloadDone
	r.awaitMasterCursorAtMetastore(10*time.Second, "the master cursor at the metastore's current id while the old master is cut off")
	if gap > 2*netLeaseTTL {
		t.Errorf("the master cursor stood still for %s during the cut; want at most 2 × lease TTL = %s", gap.Round(time.Millisecond), 2*netLeaseTTL)
	}
	if frozen > r.masterCursor() {
		t.Errorf("%s's FE at %d, past the committed cursor %d", old, frozen, r.masterCursor())
	}

	successor := r.master()
	r.healLinks(m)
	r.awaitInSync(20*time.Second, "every FE, the old master's included, at the metastore's current id after the heal")
	if now := r.master(); now != successor {
		t.Errorf("master %q after the heal; want %s to stay master (the old master rejoins as a follower)", now, successor)
	}
}

// leader is the election's leader key and member as etcd holds them (both ""
// when there is none or etcd does not answer). A new key is a new term: another
// member, or the same member elected again with a new lease.
func (r *netRig) leader() (key, member string) {
	resp, err := r.read(r.store.ElectionPrefix()+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return "", ""
	}
	return string(resp.Kvs[0].Key), string(resp.Kvs[0].Value)
}

// leaderTrace samples the election's leader every 50 ms until the returned
// stop is called, which returns what it saw.
func (r *netRig) leaderTrace() (stop func() leaderSeen) {
	type term struct{ key, member string }
	type seen struct {
		terms      []term
		leaderless time.Duration
	}
	quit, out := make(chan struct{}), make(chan seen, 1)
	go func() {
		key, member := r.leader()
		got := seen{terms: []term{{key, member}}}
		last := time.Now()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				out <- got
				return
			case <-tick.C:
			}
			key, member := r.leader()
			now := time.Now()
			if key == "" {
				got.leaderless += now.Sub(last)
			} else if key != got.terms[len(got.terms)-1].key {
				got.terms = append(got.terms, term{key, member})
			}
			last = now
		}
	}()
	var once sync.Once
	var res leaderSeen
	stop = func() leaderSeen {
		once.Do(func() {
			close(quit)
			got := <-out
			for _, tm := range got.terms {
				res.leaders = append(res.leaders, tm.member)
			}
			res.elections, res.leaderless = len(got.terms)-1, got.leaderless
		})
		return res
	}
	r.t.Cleanup(func() { stop() })
	return stop
}

// leaderSeen is what a leaderTrace saw: the elections (changes of the leader
// key: a successor, or the master elected again after losing its lease; a
// time without a leader, or without an answer from etcd, counts as none), the
// members that led, in order, and the time without a leader.
type leaderSeen struct {
	elections  int
	leaders    []string
	leaderless time.Duration
}

// latencyLoad is what a latency run adds to every sidecar's etcd round trips
// for window.
type latencyLoad struct {
	rtt    time.Duration
	window time.Duration
	// A fraction of the requests is held spikeExtra beyond rtt.
	spikeFraction float64
	spikeExtra    time.Duration
	// Every burstEvery, for burstFor, every round trip takes burst.
	burstEvery, burstFor, burst time.Duration
}

// latencyResult is what a latency run saw.
type latencyResult struct {
	span time.Duration
	leaderSeen
	changes int // master cursor changes
	gap     time.Duration
	// requests through the sidecars' latency proxies, and how many a spike held
	requests, spiked int64
}

func (res latencyResult) changesPerSecond() float64 { return float64(res.changes) / res.span.Seconds() }

func (res latencyResult) electionsPerMinute() float64 {
	return float64(res.elections) / res.span.Minutes()
}

// survives is the bar a latency must pass: at most one election in the run and
// the master cursor never still for more than 2 × lease TTL.
func (res latencyResult) survives(leaseTTL time.Duration) bool {
	return res.elections <= 1 && res.gap <= 2*leaseTTL
}

// runLatency applies ld to the rig (opts.delayable) with the workload running
// and traces the election and the master cursor meanwhile. The added latency
// stays on when it returns.
func (r *netRig) runLatency(ld latencyLoad) latencyResult {
	var requests0, spiked0 int64
	for _, d := range r.delays {
		all, spiked := d.Requests()
		requests0, spiked0 = requests0+all, spiked0+spiked
	}
	stopLeaders := r.leaderTrace()
	stopCursor := r.cursorTrace()
	start := time.Now()
	r.setEtcdRoundTrip(ld.rtt)
	for _, d := range r.delays {
		d.SetSpikes(ld.spikeFraction, ld.spikeExtra)
	}
	// The schedule of the bursts, not a synchronisation: the run is a fixed
	// window of time.
	for time.Since(start) < ld.window {
		if ld.burstEvery <= 0 {
			time.Sleep(ld.window - time.Since(start))
			break
		}
		time.Sleep(min(ld.burstEvery-ld.burstFor, max(0, ld.window-time.Since(start))))
		if time.Since(start) >= ld.window {
			break
		}
		r.setEtcdRoundTrip(ld.burst)
		time.Sleep(ld.burstFor)
		r.setEtcdRoundTrip(ld.rtt)
	}
	changes := stopCursor()
	seen := stopLeaders()
	end := time.Now()
	res := latencyResult{span: end.Sub(start), leaderSeen: seen, changes: len(changes), gap: longestGap(start, end, changes),
		requests: -requests0, spiked: -spiked0}
	for _, d := range r.delays {
		all, spiked := d.Requests()
		res.requests, res.spiked = res.requests+all, res.spiked+spiked
	}
	return res
}

// With 300 ms added to every etcd round trip (a third of request_timeout) and,
// every 10 s, a second in which round trips take longer than request_timeout,
// the sidecars do not flap (at most one election) and the master cursor keeps
// moving: at least every 2 × lease TTL, and up to the metastore's id.
func TestEtcdLatencyDoesNotFlap(t *testing.T) {
	r := newNetRigWith(t, 100, netOpts{leaseTTL: netLeaseTTL, requestTimeout: netRequestTimeout, delayable: true, productionFE: true})
	ld := latencyLoad{rtt: 300 * time.Millisecond, window: 40 * time.Second,
		burstEvery: 10 * time.Second, burstFor: time.Second, burst: 2 * netRequestTimeout}
	res := r.runLatency(ld)
	t.Logf("%s at %s round trips (%s bursts every 10 s): %d master cursor changes, %.1f/s, longest time without one %s; leaders %v",
		res.span.Round(time.Millisecond), ld.rtt, ld.burst, res.changes, res.changesPerSecond(), res.gap.Round(time.Millisecond), res.leaders)
	if res.elections > 1 {
		t.Errorf("%d elections (leaders %v); want at most one", res.elections, res.leaders)
	}
	if res.gap > 2*netLeaseTTL {
		t.Errorf("the master cursor stood still for %s; want at most 2 × lease TTL = %s", res.gap.Round(time.Millisecond), 2*netLeaseTTL)
	}
	r.stopWorkload()
	<-r.workloadDone
	r.awaitMasterCursorAtMetastore(15*time.Second, "the master cursor at the metastore's current id with the latency on")
	r.setEtcdRoundTrip(0)
}
