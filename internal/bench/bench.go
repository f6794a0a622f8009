package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/embedetcd"
)

// Options are the bench's settings (the flags of `hmssync bench`).
type Options struct {
	// Events is the backlog size of the drain phase.
	Events int
	// Steady is the length of the steady phase, in which Rate events per
	// second are appended.
	Steady time.Duration
	// Runs is the number of runs per dialect; figures are medians over them.
	Runs int
	Rate float64
	// FELatency is the time each fake FE takes per statement (doris) or batch
	// (native).
	FELatency time.Duration
	// BatchSize, Poll and BusyPoll are the sidecars' catalogs[].batch_size,
	// poll_interval and busy_poll_interval (BatchSize also the raw fetch loop's).
	BatchSize      int
	Poll, BusyPoll time.Duration
	// Idle is the length of the idle phase after the steady one (0: none).
	Idle time.Duration
	// Dialects are the dialects measured: doris, native or both.
	Dialects []string
	// ProfileDir, when set, receives each sidecar's CPU and allocation profiles.
	ProfileDir string
	// Transactional makes the backlog hmstest.BenchTxnMix (5% of the steps on
	// transactional tables) instead of hmstest.BenchMix. Off by default: the
	// figures in BENCHMARKS.md are BenchMix's.
	Transactional bool
	// Command is the command line reported with the figures.
	Command string
	// SidecarArgs are the arguments that make this program's executable run
	// one bench sidecar (RunSidecar) from a configuration file: `hmssync`
	// takes ["bench", "sidecar"]; --config FILE (and --profile PREFIX) follow.
	SidecarArgs []string
}

// Check reports every bad option at once, named by its flag.
func (o Options) Check() error {
	var bad []string
	if o.Events < 1 {
		bad = append(bad, fmt.Sprintf("--events %d: want at least 1", o.Events))
	}
	if o.Runs < 1 {
		bad = append(bad, fmt.Sprintf("--runs %d: want at least 1", o.Runs))
	}
	if o.Rate <= 0 || o.Steady <= 0 || o.Rate*o.Steady.Seconds() < 1 {
		bad = append(bad, fmt.Sprintf("--rate %g for --duration %s: want at least one event in the steady phase", o.Rate, o.Steady))
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
	if o.Idle < 0 {
		bad = append(bad, fmt.Sprintf("--idle %s: want 0 or more", o.Idle))
	}
	if o.FELatency < 0 {
		bad = append(bad, fmt.Sprintf("--fe-latency %s: want 0 or more", o.FELatency))
	}
	if len(o.Dialects) == 0 {
		bad = append(bad, "--dialects: want doris, native or both")
	}
	for _, d := range o.Dialects {
		if d != "doris" && d != "native" {
			bad = append(bad, fmt.Sprintf("--dialects: %q is not doris or native", d))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Run runs every dialect's topology o.Runs times and reports the medians;
// progress goes to progress as it happens.
func Run(ctx context.Context, o Options, progress io.Writer) (*Report, error) {
	start := time.Now()
	say := progressLine(progress, "bench")
	rep := &Report{
		Machine: fmt.Sprintf("%d cores, %s", runtime.NumCPU(), machineDescription()), GoVersion: runtime.Version(),
		LoadBefore: loadAverage(), Command: o.Command, Events: o.Events, Runs: o.Runs, BatchSize: o.BatchSize,
		PollIntervalMS: millis(o.Poll), BusyPollIntervalMS: millis(o.BusyPoll), IdleSeconds: o.Idle.Seconds(), FELatencyMS: millis(o.FELatency), SteadyRate: o.Rate, SteadySeconds: o.Steady.Seconds(),
		Dialects: map[string]*Figures{}, InFE: inFECeiling(),
	}
	say("load average %s on %s", rep.LoadBefore, rep.Machine)

	dir, err := os.MkdirTemp("", "hmssync-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: --profile-dir: %w", err)
		}
		f, err := os.Create(filepath.Join(o.ProfileDir, "bench.cpu.pprof"))
		if err != nil {
			return nil, fmt.Errorf("bench: --profile-dir: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("bench: cpu profile of the bench process: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	etcd, err := embedetcd.Start(ctx, embedetcd.Config{Dir: dir + "/etcd"})
	if err != nil {
		return nil, err
	}
	defer etcd.Close()
	cli, err := etcd.Client()
	if err != nil {
		return nil, err
	}
	defer cli.Close()

	mix, mixName := hmstest.BenchMix, "bench mix"
	if o.Transactional {
		mix, mixName = hmstest.BenchTxnMix, "bench mix with transactional steps"
	}
	say("generating %d events of the %s", o.Events, mixName)
	tmpl, err := newBenchTemplate(o.Events, mix)
	if err != nil {
		return nil, err
	}
	defer tmpl.close()
	env := &benchEnv{o: o, etcd: etcd.Endpoints(), cli: cli, tmpl: tmpl, dir: dir, say: say}

	var raws []float64
	samples := map[string][]runSample{}
	for run := 1; run <= o.Runs; run++ {
		raw, err := rawFetchRate(ctx, tmpl, o.BatchSize)
		if err != nil {
			return nil, err
		}
		raws = append(raws, raw)
		say("run %d/%d: raw fetch %.0f events/s (batch size %d)", run, o.Runs, raw, o.BatchSize)
		for _, d := range o.Dialects {
			s, err := env.runTopology(ctx, d, run)
			if err != nil {
				return nil, err
			}
			samples[d] = append(samples[d], s)
		}
	}
	rep.RawFetchEPS = median(raws)
	for _, d := range o.Dialects {
		rep.Dialects[d] = figuresOf(samples[d], rep.RawFetchEPS)
	}
	rep.headline(o.Dialects)
	rep.unmeasured()
	rep.LoadAfter = loadAverage()
	rep.Seconds = time.Since(start).Seconds()
	say("done in %.0fs; load average %s", rep.Seconds, rep.LoadAfter)
	return rep, nil
}

// rawFetchRate is the metastore's own limit as a client sees it: the same
// client and batch size as the sidecars, fetching the whole template log in a
// bare loop, nothing decoded or applied.
func rawFetchRate(ctx context.Context, tmpl *benchTemplate, batch int) (float64, error) {
	hc, err := hms.NewClient(hms.ClientConfig{URIs: []string{tmpl.src.URI()}, DialTimeout: 10 * time.Second, CallTimeout: 30 * time.Second})
	if err != nil {
		return 0, fmt.Errorf("bench: raw fetch client: %w", err)
	}
	defer hc.Close()
	last := tmpl.events[len(tmpl.events)-1].ID
	// One call first, unmeasured, so that connecting is not counted.
	if _, err := hc.CurrentEventID(ctx); err != nil {
		return 0, fmt.Errorf("bench: raw fetch: %w", err)
	}
	start := time.Now()
	n := 0
	for after := int64(0); after < last; {
		f, err := hc.NextEvents(ctx, after, batch, nil)
		if err != nil {
			return 0, fmt.Errorf("bench: raw fetch after %d: %w", after, err)
		}
		if len(f.Events) == 0 {
			return 0, fmt.Errorf("bench: raw fetch after %d: no events, want up to %d", after, last)
		}
		n += len(f.Events)
		after = f.Events[len(f.Events)-1].ID
	}
	return perSecond(int64(n), time.Since(start)), nil
}

// progressLine returns a printer of progress lines to w, each led by prefix and
// the seconds since the call.
func progressLine(w io.Writer, prefix string) func(format string, args ...any) {
	start := time.Now()
	var mu sync.Mutex // the soak's faults and its sampling both report
	return func(format string, args ...any) {
		line := fmt.Sprintf("%s %6.1fs  %s\n", prefix, time.Since(start).Seconds(), fmt.Sprintf(format, args...))
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(w, line)
	}
}
