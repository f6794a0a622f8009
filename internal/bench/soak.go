package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/embedetcd"
)

// `hmssync bench soak` runs three native sidecars (child processes, as the
// bench's) against a fake metastore whose workload appends Rate events per
// second for Duration, while faults are injected on a fixed schedule: the
// master killed with SIGKILL and restarted, the etcd member restarted in place
// (the soak's etcd is one embedded member; its data directory and client
// address survive the restart), the metastore closed and listening again on
// the same address with its state. Every SampleEvery it records each
// sidecar's RSS, heap in use, goroutines, open file descriptors and lag, etcd's database
// size and the cluster's lag; at the end it stops the workload and checks that
// every FE holds the metastore's state. The report gives each figure's
// least-squares slope per hour over the samples after the warm-up.
//
// Two things a production deployment has are done by the soak itself, so that
// what grows is hmssync's and not the fixture's: etcd is compacted every
// minute to the revision of a minute before (as etcd's periodic
// auto-compaction does; a tenth of the run in runs under ten minutes), and the metastore's log is cleaned below the lowest
// member cursor (as the metastore's event time to live does), which keeps the
// fake metastore's memory bounded.

// SoakOptions are the settings of `hmssync bench soak`.
type SoakOptions struct {
	// Duration is how long the workload runs; the soak stops by itself then
	// (and ends after the final check, bounded by soakConvergeTimeout).
	Duration time.Duration
	// Rate is the workload's events per second.
	Rate float64
	// FailoverEvery, EtcdRestartEvery and MetastoreRestartEvery space the
	// faults of each kind (0: none of that kind). The first master kill is at
	// FailoverEvery, the first etcd restart at half EtcdRestartEvery, the
	// first metastore restart at three quarters of MetastoreRestartEvery, so
	// that kinds rarely meet; faults run one at a time, and none starts in
	// the last Quiet of the run.
	FailoverEvery, EtcdRestartEvery, MetastoreRestartEvery time.Duration
	// Quiet is the end of the run in which no fault starts.
	Quiet time.Duration
	// Downtime is how long the etcd member and the metastore stay down.
	Downtime time.Duration
	// SampleEvery is the sampling interval.
	SampleEvery time.Duration
	// Warmup is left out of the slopes: the first Warmup of the run, and the
	// first Warmup of each sidecar process after a restart.
	Warmup time.Duration
	// LeaseTTL is the sidecars' etcd.lease_ttl; below 12 s (the default's
	// request timeout of 3 s must stay under a third of it) the request
	// timeout becomes a quarter of it.
	LeaseTTL time.Duration
	// FELatency is the fake FEs' time per batch.
	FELatency time.Duration
	// Transactional makes the workload hmstest.BenchTxnMix (5% of the steps
	// on transactional tables, their transactions open across failovers and
	// restarts) instead of hmstest.BenchMix.
	Transactional bool
	// BatchSize, Poll and BusyPoll are the sidecars' catalogs[] settings.
	BatchSize      int
	Poll, BusyPoll time.Duration
	// MaxSlopes bounds slopes by name (SoakSlope.Name) in their unit per
	// hour; Verdict fails a report whose slope exceeds its bound.
	MaxSlopes map[string]float64
	// Command is the command line reported with the figures.
	Command string
	// SidecarArgs make this executable run one bench sidecar (Options.SidecarArgs).
	SidecarArgs []string
}

// Check reports every bad option at once, named by its flag.
func (o SoakOptions) Check() error {
	var bad []string
	if o.Duration < 5*time.Second || o.Duration > 48*time.Hour {
		bad = append(bad, fmt.Sprintf("--duration %s: want 5s to 48h", o.Duration))
	}
	if o.Rate <= 0 || o.Rate > 20000 {
		bad = append(bad, fmt.Sprintf("--rate %g: want more than 0, up to 20000", o.Rate))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--failover-every", o.FailoverEvery}, {"--etcd-restart-every", o.EtcdRestartEvery}, {"--metastore-restart-every", o.MetastoreRestartEvery}, {"--quiet", o.Quiet}, {"--warmup", o.Warmup}, {"--fe-latency", o.FELatency}} {
		if d.v < 0 {
			bad = append(bad, fmt.Sprintf("%s %s: want 0 or more", d.flag, d.v))
		}
	}
	if o.Downtime < 0 || o.Downtime > time.Minute {
		bad = append(bad, fmt.Sprintf("--downtime %s: want 0 to 1m", o.Downtime))
	}
	if o.SampleEvery < 100*time.Millisecond || o.SampleEvery > o.Duration/4 {
		bad = append(bad, fmt.Sprintf("--sample-interval %s: want 100ms up to a quarter of --duration", o.SampleEvery))
	}
	if o.Warmup >= o.Duration {
		bad = append(bad, fmt.Sprintf("--warmup %s: want less than --duration %s", o.Warmup, o.Duration))
	}
	if o.BatchSize < 1 || o.BatchSize > 100000 {
		bad = append(bad, fmt.Sprintf("--batch-size %d: want 1 to 100000", o.BatchSize))
	}
	if o.Poll < 10*time.Millisecond || o.Poll > time.Hour {
		bad = append(bad, fmt.Sprintf("--poll-interval %s: want 10ms to 1h", o.Poll))
	}
	if o.BusyPoll < time.Millisecond || o.BusyPoll > o.Poll {
		bad = append(bad, fmt.Sprintf("--busy-poll-interval %s: want 1ms up to --poll-interval %s", o.BusyPoll, o.Poll))
	}
	for name := range o.MaxSlopes {
		if !slices.Contains(soakSlopeNames, name) {
			bad = append(bad, fmt.Sprintf("--max-slope %s: not a slope (want one of %s)", name, strings.Join(soakSlopeNames, ", ")))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench soak: %s", strings.Join(bad, "; "))
	}
	return nil
}

// ParseMaxSlope reads NAME=VALUE (a --max-slope flag).
func ParseMaxSlope(s string) (string, float64, error) {
	name, v, ok := strings.Cut(s, "=")
	f, err := strconv.ParseFloat(v, 64)
	if !ok || name == "" || err != nil {
		return "", 0, fmt.Errorf("--max-slope %q: want NAME=VALUE, e.g. rss_mib=128", s)
	}
	return name, f, nil
}

// Bounds on the soak's own waits.
const (
	soakStartTimeout    = 60 * time.Second // the sidecars' first refresh and election
	soakRecoverTimeout  = 90 * time.Second // a fault until the master cursor moves again
	soakConvergeTimeout = 2 * time.Minute  // the final check
	soakCompactMax      = time.Minute      // etcd compaction interval, shorter in runs under 10 minutes
	soakCleanMargin     = 1000             // events kept below the lowest member cursor
	soakWorkloadSeed    = 27
)

// soakSlot is one sidecar of the soak: its configuration, kept across
// restarts, and the process running it now.
type soakSlot struct {
	cfg   config.Config
	child *benchChild
	start time.Time // when the current process started
	// killed is set while the soak has killed the process and not yet
	// started the next: its exit is no failure.
	killed bool
}

// soak is one soak run: what RunSoak starts, samples and faults.
type soak struct {
	o        SoakOptions
	say      func(format string, args ...any)
	dir      string
	etcdDir  string
	etcdAddr string
	root     string
	cli      *clientv3.Client
	hms      *hmstest.Server
	fes      []*fetest.Server
	hc       *http.Client
	t0       time.Time // the workload's start

	mu    sync.Mutex
	etcd  *embedetcd.Server // nil while restarting
	slots []*soakSlot
	// faults are the faults done so far.
	faults []SoakFault
}

// RunSoak runs the soak and reports it; progress goes to progress as it
// happens. An error means the soak could not run; a run whose final check
// failed is reported (Report.Final.OK false) without an error.
func RunSoak(ctx context.Context, o SoakOptions, progress io.Writer) (rep *SoakReport, err error) {
	started := time.Now()
	s := &soak{o: o, say: progressLine(progress, "soak"), hc: &http.Client{Timeout: 5 * time.Second}}
	defer s.hc.CloseIdleConnections()
	rep = &SoakReport{
		Machine: fmt.Sprintf("%d cores, %s", runtime.NumCPU(), machineDescription()), GoVersion: runtime.Version(),
		LoadBefore: loadAverage(), Command: o.Command, Dialect: "native", Sidecars: benchMembers,
		Etcd:            "one embedded member, restarted in place (same data directory and client address)",
		DurationSeconds: o.Duration.Seconds(), Rate: o.Rate, WarmupSeconds: o.Warmup.Seconds(), SampleSeconds: o.SampleEvery.Seconds(),
		LeaseTTLSeconds: o.LeaseTTL.Seconds(), BatchSize: o.BatchSize, PollIntervalMS: millis(o.Poll), FELatencyMS: millis(o.FELatency),
	}
	s.say("load average %s on %s", rep.LoadBefore, rep.Machine)

	if s.dir, err = os.MkdirTemp("", "hmssync-soak-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(s.dir)
	if err := s.startEtcd(ctx); err != nil {
		return nil, err
	}
	defer func() {
		s.mu.Lock()
		e := s.etcd
		s.mu.Unlock()
		if e != nil {
			e.Close()
		}
	}()
	s.cli, err = clientv3.New(clientv3.Config{Endpoints: []string{"http://" + s.etcdAddr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("soak: etcd client: %w", err)
	}
	defer s.cli.Close()
	if s.root, err = cursorstore.ClusterPrefix(cursorstore.DefaultPrefix, "soak"); err != nil {
		return nil, err
	}

	s.hms = hmstest.NewServer()
	defer s.hms.Close()
	for range benchMembers {
		fe := fetest.NewServer(fetest.Options{Loader: func(context.Context, string) (fetest.Truth, error) { return s.hms.Snapshot(), nil }})
		defer fe.Close()
		if o.FELatency > 0 {
			fe.InjectFault(fetest.Fault{Delay: o.FELatency})
		}
		s.fes = append(s.fes, fe)
	}

	defer func() {
		// Stop every sidecar as an orchestrator would; a failed run gets
		// the tails of their logs.
		for _, sl := range s.slots {
			if sl.child == nil || sl.killed {
				continue
			}
			if serr := sl.child.stop(15 * time.Second); serr != nil && err == nil {
				err = fmt.Errorf("soak: %w", serr)
			}
		}
		if err != nil {
			err = fmt.Errorf("%w%s", err, childLogs(s.children()))
		}
	}()
	if err := s.startSidecars(); err != nil {
		return nil, err
	}
	if err := s.awaitStart(ctx); err != nil {
		return nil, err
	}

	// The workload, the faults and the sampling run until Duration.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	wdone := make(chan error, 1)
	s.t0 = time.Now()
	go func() {
		mix := hmstest.BenchMix
		if o.Transactional {
			mix = hmstest.BenchTxnMix
		}
		wdone <- hmstest.Workload{Rate: o.Rate, Seed: soakWorkloadSeed, Mix: mix, Databases: 2, Tables: 50}.Run(wctx, s.hms)
	}()
	fctx, fcancel := context.WithCancel(ctx)
	fdone := make(chan struct{})
	go func() {
		defer close(fdone)
		s.runFaults(fctx, ctx)
	}()
	samples, serr := s.sampleUntil(ctx, s.t0.Add(o.Duration), wdone)
	fcancel()
	<-fdone
	wcancel()
	werr := <-wdone
	if serr != nil {
		return nil, serr
	}
	if werr != nil && !errors.Is(werr, context.Canceled) {
		return nil, fmt.Errorf("soak: workload: %w", werr)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("soak: interrupted: %w", ctx.Err())
	}
	rep.AppendedEvents = s.hms.CurrentEventID()
	rep.AppendRate = float64(rep.AppendedEvents) / time.Since(s.t0).Seconds()
	s.say("workload stopped at event %d (%.0f events/s); checking that every FE holds the metastore's state", rep.AppendedEvents, rep.AppendRate)

	rep.Final = s.finalCheck(ctx)
	s.mu.Lock()
	rep.Faults = append([]SoakFault(nil), s.faults...)
	s.mu.Unlock()
	for _, f := range rep.Faults {
		if f.Error != "" {
			rep.Final.OK = false
			rep.Final.Problems = append(rep.Final.Problems, fmt.Sprintf("%s at %.0fs: %s", f.Kind, f.AtSeconds, f.Error))
		}
	}
	rep.Samples = samples
	rep.Slopes = soakSlopes(samples, o.Warmup.Seconds())
	rep.LoadAfter = loadAverage()
	rep.Seconds = time.Since(started).Seconds()
	s.say("done in %.0fs; final check %s; load average %s", rep.Seconds, okWord(rep.Final.OK), rep.LoadAfter)
	return rep, nil
}

func okWord(ok bool) string {
	if ok {
		return "passed"
	}
	return "FAILED"
}

// startEtcd starts the embedded member; the first start picks its client
// address, restarts reuse it and the data directory.
func (s *soak) startEtcd(ctx context.Context) error {
	if s.etcdAddr == "" {
		addr, err := freeAddress()
		if err != nil {
			return err
		}
		s.etcdAddr, s.etcdDir = addr, filepath.Join(s.dir, "etcd")
	}
	e, err := embedetcd.Start(ctx, embedetcd.Config{Dir: s.etcdDir, ClientAddr: s.etcdAddr})
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	s.mu.Lock()
	s.etcd = e
	s.mu.Unlock()
	return nil
}

// startSidecars configures and starts the three sidecars.
func (s *soak) startSidecars() error {
	o := s.o
	for i := range benchMembers {
		bo := Options{BatchSize: o.BatchSize, Poll: o.Poll, BusyPoll: o.BusyPoll}
		cfg := benchSidecarConfig("soak", fmt.Sprintf("sidecar-%d", i+1), []string{"http://" + s.etcdAddr}, s.fes[i].URL, "native", s.hms.URI(), bo)
		if o.LeaseTTL > 0 {
			cfg.Etcd.LeaseTTL = o.LeaseTTL
			if cfg.Etcd.RequestTimeout >= o.LeaseTTL/3 {
				cfg.Etcd.RequestTimeout = o.LeaseTTL / 4
			}
		}
		var err error
		if cfg.HTTP.Listen, err = freeAddress(); err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("soak: sidecar configuration: %w", err)
		}
		sl := &soakSlot{cfg: cfg}
		s.mu.Lock()
		s.slots = append(s.slots, sl)
		s.mu.Unlock()
		if err := s.restart(sl); err != nil {
			return err
		}
	}
	return nil
}

// restart starts the slot's sidecar process (again).
func (s *soak) restart(sl *soakSlot) error {
	c, err := startBenchChild(s.dir, s.o.SidecarArgs, sl.cfg, "")
	if err != nil {
		return err
	}
	s.mu.Lock()
	sl.child, sl.start, sl.killed = c, time.Now(), false
	s.mu.Unlock()
	return nil
}

// children are the current processes, for their logs.
func (s *soak) children() []*benchChild {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*benchChild
	for _, sl := range s.slots {
		out = append(out, sl.child)
	}
	return out
}

// soakCursors are the cursors in etcd: the master cursor and each member's.
type soakCursors struct {
	master  int64 // -1: none yet
	members map[string]int64
	rev     int64
}

func (s *soak) readCursors(ctx context.Context) (soakCursors, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c := soakCursors{master: -1, members: map[string]int64{}}
	resp, err := s.cli.Get(ctx, s.root+"/", clientv3.WithPrefix())
	if err != nil {
		return c, err
	}
	c.rev = resp.Header.Revision
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), s.root+"/")
		v, perr := strconv.ParseInt(string(kv.Value), 10, 64)
		switch {
		case rest == "catalogs/"+benchCatalog+"/cursor" && perr == nil:
			c.master = v
		case strings.HasPrefix(rest, "members/") && strings.HasSuffix(rest, "/cursors/"+benchCatalog) && perr == nil:
			c.members[strings.TrimSuffix(strings.TrimPrefix(rest, "members/"), "/cursors/"+benchCatalog)] = v
		}
	}
	return c, nil
}

// awaitStart waits until a master is elected and every member has a cursor
// (its first full refresh on the empty metastore).
func (s *soak) awaitStart(ctx context.Context) error {
	return benchWait(ctx, soakStartTimeout, "the sidecars' first refresh and a master", func() (bool, error) {
		if err := s.exitedEarly(); err != nil {
			return false, err
		}
		c, err := s.readCursors(ctx)
		if err != nil || len(c.members) < benchMembers {
			return false, nil
		}
		leader, err := electionLeader(ctx, s.cli, s.root)
		if err != nil {
			return false, nil
		}
		s.say("sidecars up, %s is master", leader)
		return true, nil
	})
}

// exitedEarly is an error when a sidecar the soak did not kill has exited.
func (s *soak) exitedEarly() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.slots {
		if sl.child != nil && !sl.killed && sl.child.exited() {
			return fmt.Errorf("sidecar %s exited: %v", sl.child.name, sl.child.waitErr)
		}
	}
	return nil
}

// SoakFault is one injected fault.
type SoakFault struct {
	AtSeconds float64 `json:"at_seconds"`
	Kind      string  `json:"kind"` // master_kill, etcd_restart, metastore_restart
	Detail    string  `json:"detail"`
	// RecoverySeconds is from the fault's start until the master cursor
	// moved past where it was then (for a master kill: under a new master).
	RecoverySeconds float64 `json:"recovery_seconds"`
	Error           string  `json:"error,omitempty"`
}

// Fault kinds.
const (
	faultMasterKill       = "master_kill"
	faultEtcdRestart      = "etcd_restart"
	faultMetastoreRestart = "metastore_restart"
)

type scheduledFault struct {
	at   time.Duration
	kind string
}

// faultSchedule lists the faults of a run in order of time.
func (o SoakOptions) faultSchedule() []scheduledFault {
	var out []scheduledFault
	add := func(kind string, first, every time.Duration) {
		if every <= 0 {
			return
		}
		for at := first; at < o.Duration-o.Quiet; at += every {
			out = append(out, scheduledFault{at, kind})
		}
	}
	add(faultMasterKill, o.FailoverEvery, o.FailoverEvery)
	add(faultEtcdRestart, o.EtcdRestartEvery/2, o.EtcdRestartEvery)
	add(faultMetastoreRestart, o.MetastoreRestartEvery*3/4, o.MetastoreRestartEvery)
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// runFaults does the scheduled faults one at a time until next ends; a fault
// under way then runs to its end (under ctx, the run's), so that the final
// check finds every sidecar running. Each is bounded in time.
func (s *soak) runFaults(next, ctx context.Context) {
	for _, f := range s.o.faultSchedule() {
		t := time.NewTimer(time.Until(s.t0.Add(f.at)))
		select {
		case <-next.Done():
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		rec := SoakFault{AtSeconds: start.Sub(s.t0).Seconds(), Kind: f.kind}
		var err error
		switch f.kind {
		case faultMasterKill:
			rec.Detail, err = s.killMaster(ctx, start)
		case faultEtcdRestart:
			rec.Detail, err = s.restartEtcd(ctx, start)
		case faultMetastoreRestart:
			rec.Detail, err = s.restartMetastore(ctx, start)
		}
		rec.RecoverySeconds = time.Since(start).Seconds()
		if err != nil {
			rec.Error = err.Error()
			s.say("%s: %v", f.kind, err)
		} else {
			s.say("%s: %s; recovered in %.1fs", f.kind, rec.Detail, rec.RecoverySeconds)
		}
		s.mu.Lock()
		s.faults = append(s.faults, rec)
		s.mu.Unlock()
	}
}

// masterCursorNow is the master cursor in etcd, retried until it can be read.
func (s *soak) masterCursorNow(ctx context.Context) (int64, error) {
	var v int64
	err := benchWait(ctx, soakRecoverTimeout, "a readable master cursor", func() (bool, error) {
		c, err := s.readCursors(ctx)
		v = c.master
		return err == nil, nil
	})
	return v, err
}

// awaitProgress waits until the master cursor passes from, under a master
// other than not (when set).
func (s *soak) awaitProgress(ctx context.Context, from int64, not string) error {
	return benchWait(ctx, soakRecoverTimeout, fmt.Sprintf("the master cursor past %d", from), func() (bool, error) {
		c, err := s.readCursors(ctx)
		if err != nil || c.master <= from {
			return false, nil
		}
		if not == "" {
			leader, err := electionLeader(ctx, s.cli, s.root)
			return err == nil && leader != not, nil
		}
		return true, nil
	})
}

// killMaster kills the master with SIGKILL, waits for a successor to move the
// cursor, and restarts the killed sidecar, which rejoins as a follower.
func (s *soak) killMaster(ctx context.Context, start time.Time) (detail string, err error) {
	leader, err := electionLeader(ctx, s.cli, s.root)
	if err != nil {
		return "", err
	}
	var sl *soakSlot
	s.mu.Lock()
	for _, x := range s.slots {
		if x.cfg.Member == leader {
			sl = x
		}
	}
	s.mu.Unlock()
	if sl == nil {
		return "", fmt.Errorf("the election names %q, not one of the sidecars", leader)
	}
	from, err := s.masterCursorNow(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	sl.killed = true
	s.mu.Unlock()
	sl.child.kill()
	// The killed sidecar is restarted whatever happens next, so that the
	// soak goes on with three.
	defer func() {
		if rerr := s.restart(sl); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err = s.awaitProgress(ctx, from, leader); err != nil {
		return "", err
	}
	next, _ := electionLeader(ctx, s.cli, s.root)
	return fmt.Sprintf("killed %s (SIGKILL), %s master after %.1fs, %s restarted", leader, next, time.Since(start).Seconds(), leader), nil
}

// restartEtcd stops the etcd member, keeps it down for Downtime and starts it
// again on the same data directory and address.
func (s *soak) restartEtcd(ctx context.Context, start time.Time) (string, error) {
	from, err := s.masterCursorNow(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	e := s.etcd
	s.etcd = nil
	s.mu.Unlock()
	e.Close()
	sleepCtx(ctx, s.o.Downtime)
	// Started with a context of its own: a soak ending meanwhile must not
	// leave it down, the final check needs it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	err = s.startEtcd(sctx)
	cancel()
	if err != nil {
		return "", err
	}
	up := time.Since(start)
	if err := s.awaitProgress(ctx, from, ""); err != nil {
		return "", err
	}
	return fmt.Sprintf("etcd down for %.1fs", up.Seconds()), nil
}

// restartMetastore closes the metastore's listener and connections, keeps it
// down for Downtime and listens again on the same address with its state.
func (s *soak) restartMetastore(ctx context.Context, start time.Time) (string, error) {
	from, err := s.masterCursorNow(ctx)
	if err != nil {
		return "", err
	}
	s.hms.Down()
	sleepCtx(ctx, s.o.Downtime)
	if err := s.hms.Up(); err != nil {
		return "", err
	}
	up := time.Since(start)
	if err := s.awaitProgress(ctx, from, ""); err != nil {
		return "", err
	}
	return fmt.Sprintf("metastore down for %.1fs", up.Seconds()), nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// kill ends the process with SIGKILL, as a crash or an OOM kill would.
func (c *benchChild) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
	_ = c.stdin.Close()
}

// SoakSample is one sample of the run. A figure that could not be read at
// that moment (etcd down, a sidecar restarting) is -1.
type SoakSample struct {
	AtSeconds float64 `json:"at_seconds"`
	// MetastoreEventID is the newest event id; LagEvents is how far the
	// master cursor is behind it.
	MetastoreEventID int64              `json:"metastore_event_id"`
	MasterCursor     int64              `json:"master_cursor"`
	LagEvents        int64              `json:"lag_events"`
	EtcdDBBytes      int64              `json:"etcd_db_bytes"`
	EtcdDBInUseBytes int64              `json:"etcd_db_in_use_bytes"`
	Members          []SoakMemberSample `json:"members"`
}

// SoakMemberSample is one sidecar process at one sample.
type SoakMemberSample struct {
	Member string `json:"member"`
	PID    int    `json:"pid"`
	// UpSeconds is how long this process had run.
	UpSeconds  float64 `json:"up_seconds"`
	RSSBytes   int64   `json:"rss_bytes"`
	Goroutines int64   `json:"goroutines"`
	OpenFDs    int64   `json:"open_fds"`
	// HeapInuseBytes is the sidecar's go_memstats_heap_inuse_bytes: the live
	// heap's spans, which tell a leak apart from RSS the runtime has not yet
	// returned to the kernel.
	HeapInuseBytes int64 `json:"heap_inuse_bytes"`
	// LagEvents is the sidecar's own hmssync_lag_events.
	LagEvents int64 `json:"lag_events"`
}

// sampleUntil samples every SampleEvery until end, compacting etcd and
// cleaning the metastore's log as it goes; it fails when a sidecar the soak
// did not kill exits or the workload fails.
func (s *soak) sampleUntil(ctx context.Context, end time.Time, wdone chan error) ([]SoakSample, error) {
	var samples []SoakSample
	tick := time.NewTicker(s.o.SampleEvery)
	defer tick.Stop()
	var compactRev int64
	compactEvery := s.o.compactEvery()
	nextCompact := time.Now().Add(compactEvery)
	lastSay := time.Now()
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return samples, nil
		case err := <-wdone:
			wdone <- err
			return nil, fmt.Errorf("soak: the workload ended early: %v", err)
		case <-tick.C:
		}
		if err := s.exitedEarly(); err != nil {
			return nil, fmt.Errorf("soak: %w", err)
		}
		sm, cur := s.sample(ctx)
		samples = append(samples, sm)
		if cur.rev > 0 && time.Now().After(nextCompact) {
			if compactRev > 0 {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := s.cli.Compact(cctx, compactRev)
				cancel()
				if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
					s.say("compact etcd to revision %d: %v", compactRev, err)
				}
			}
			compactRev, nextCompact = cur.rev, time.Now().Add(compactEvery)
		}
		if len(cur.members) == benchMembers {
			low := int64(-1)
			for _, v := range cur.members {
				if low < 0 || v < low {
					low = v
				}
			}
			if low > soakCleanMargin {
				s.hms.Clean(low - soakCleanMargin)
			}
		}
		if time.Since(lastSay) >= 30*time.Second || s.o.Duration < 2*time.Minute && time.Since(lastSay) >= 5*time.Second {
			lastSay = time.Now()
			var rss []string
			for _, m := range sm.Members {
				rss = append(rss, fmt.Sprintf("%s %.1f MiB (heap %.1f) %d goroutines %d fds", m.Member, float64(m.RSSBytes)/(1<<20), float64(m.HeapInuseBytes)/(1<<20), m.Goroutines, m.OpenFDs))
			}
			db := "etcd not answering"
			if sm.EtcdDBBytes >= 0 {
				db = fmt.Sprintf("etcd db %.1f MiB (%.1f in use)", float64(sm.EtcdDBBytes)/(1<<20), float64(sm.EtcdDBInUseBytes)/(1<<20))
			}
			s.say("%.0fs: event %d, lag %d; %s; %s", sm.AtSeconds, sm.MetastoreEventID, sm.LagEvents, db, strings.Join(rss, "; "))
		}
	}
	return samples, nil
}

// compactEvery is how often the soak compacts etcd (to the revision it saw at
// the previous compaction): every minute, or every tenth of a shorter run
// (but not more often than it samples), so that a short run reaches etcd's
// steady size too.
func (o SoakOptions) compactEvery() time.Duration {
	return max(o.SampleEvery, min(soakCompactMax, o.Duration/10))
}

// sample takes one sample; it also returns the cursors it read (none when
// etcd could not be read).
func (s *soak) sample(ctx context.Context) (SoakSample, soakCursors) {
	now := time.Now()
	sm := SoakSample{AtSeconds: now.Sub(s.t0).Seconds(), MetastoreEventID: s.hms.CurrentEventID(), MasterCursor: -1, LagEvents: -1, EtcdDBBytes: -1, EtcdDBInUseBytes: -1}
	cur, err := s.readCursors(ctx)
	if err == nil && cur.master >= 0 {
		sm.MasterCursor = cur.master
		sm.LagEvents = max(0, sm.MetastoreEventID-cur.master)
	}
	if err != nil {
		cur = soakCursors{}
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if st, err := s.cli.Status(sctx, "http://"+s.etcdAddr); err == nil {
		sm.EtcdDBBytes, sm.EtcdDBInUseBytes = st.DbSize, st.DbSizeInUse
	}
	cancel()
	s.mu.Lock()
	slots := make([]soakSlot, len(s.slots))
	for i, sl := range s.slots {
		slots[i] = *sl
	}
	s.mu.Unlock()
	for _, sl := range slots {
		if sl.child == nil || sl.child.exited() {
			continue
		}
		m := SoakMemberSample{Member: sl.cfg.Member, PID: sl.child.pid(), UpSeconds: now.Sub(sl.start).Seconds(), RSSBytes: -1, Goroutines: -1, OpenFDs: -1, HeapInuseBytes: -1, LagEvents: -1}
		if v, err := processRSS(m.PID); err == nil {
			m.RSSBytes = v
		}
		if v, err := processOpenFDs(m.PID); err == nil {
			m.OpenFDs = int64(v)
		}
		if vals, err := scrapeValues(ctx, s.hc, sl.cfg.HTTP.Listen, "go_goroutines", "go_memstats_heap_inuse_bytes", "hmssync_lag_events"); err == nil {
			if v, ok := vals["go_goroutines"]; ok {
				m.Goroutines = int64(v)
			}
			if v, ok := vals["go_memstats_heap_inuse_bytes"]; ok {
				m.HeapInuseBytes = int64(v)
			}
			if v, ok := vals["hmssync_lag_events"]; ok {
				m.LagEvents = int64(v)
			}
		}
		sm.Members = append(sm.Members, m)
	}
	return sm, cur
}

// SoakFinal is the final check: after the workload stopped, every member's
// cursor and every FE's applied event id reached the metastore's newest event,
// and every FE's cache holds the metastore's databases, tables and partitions.
type SoakFinal struct {
	OK                bool             `json:"ok"`
	MetastoreEventID  int64            `json:"metastore_event_id"`
	MasterCursor      int64            `json:"master_cursor"`
	MemberCursors     map[string]int64 `json:"member_cursors"`
	FEAppliedEventIDs []int64          `json:"fe_applied_event_ids"`
	Databases         int              `json:"databases"`
	Tables            int              `json:"tables"`
	Partitions        int              `json:"partitions"`
	// ConvergedAfterSeconds is how long after the workload stopped every FE
	// held the metastore's state (-1: not within the bound).
	ConvergedAfterSeconds float64  `json:"converged_after_seconds"`
	Problems              []string `json:"problems,omitempty"`
}

// finalCheck waits, bounded, until every member and FE holds the
// metastore's state, and says what differs if they do not.
func (s *soak) finalCheck(ctx context.Context) SoakFinal {
	start := time.Now()
	want := s.hms.Snapshot()
	f := SoakFinal{MetastoreEventID: s.hms.CurrentEventID(), ConvergedAfterSeconds: -1}
	for _, tables := range want {
		f.Databases++
		for _, parts := range tables {
			f.Tables++
			f.Partitions += len(parts)
		}
	}
	var why []string
	check := func() bool {
		why = nil
		c, err := s.readCursors(ctx)
		if err != nil {
			why = append(why, fmt.Sprintf("read the cursors from etcd: %v", err))
			return false
		}
		f.MasterCursor, f.MemberCursors = c.master, c.members
		if c.master != f.MetastoreEventID {
			why = append(why, fmt.Sprintf("master cursor %d, metastore at %d", c.master, f.MetastoreEventID))
		}
		if len(c.members) != benchMembers {
			why = append(why, fmt.Sprintf("%d member cursors, want %d", len(c.members), benchMembers))
		}
		for m, v := range c.members {
			if v != f.MetastoreEventID {
				why = append(why, fmt.Sprintf("%s cursor %d, metastore at %d", m, v, f.MetastoreEventID))
			}
		}
		f.FEAppliedEventIDs = nil
		for i, fe := range s.fes {
			got := fe.AppliedEventID(benchCatalog)
			f.FEAppliedEventIDs = append(f.FEAppliedEventIDs, got)
			if got != f.MetastoreEventID {
				why = append(why, fmt.Sprintf("FE %d applied up to %d, metastore at %d", i+1, got, f.MetastoreEventID))
			}
			if d := fetest.Diff(want, fe.Snapshot(benchCatalog)); d != "" {
				why = append(why, fmt.Sprintf("FE %d cache differs from the metastore: %s", i+1, truncate(d, 500)))
			}
		}
		return len(why) == 0
	}
	err := benchWait(ctx, soakConvergeTimeout, "every FE holding the metastore's state", func() (bool, error) { return check(), nil })
	if err == nil {
		f.OK, f.ConvergedAfterSeconds = true, time.Since(start).Seconds()
		return f
	}
	sort.Strings(why)
	f.Problems = append(why, err.Error())
	return f
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " …"
}
