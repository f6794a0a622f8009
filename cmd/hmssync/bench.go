package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/embedetcd"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure drain rate, lag, latency, FE statements, etcd writes, memory and CPU against the raw metastore fetch rate",
		Description: `Runs everything on this machine: an embedded etcd, a fake metastore, fake FEs
answering each statement after --fe-latency, and one master and two followers,
each a sidecar process of its own (so that CPU and peak RSS are per sidecar),
for the doris and the native dialect. Each run drains a backlog of --events
events of the project mix, then appends events at --rate per second for
--duration. Every figure is the median over --runs runs. The raw fetch rate (a
bare fetch loop with the same client and batch size over the same log) is
measured in each run too. Progress goes to stderr, the table (or --json) to
stdout.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "events", Value: 200000, Usage: "backlog size of the drain phase"},
			&cli.DurationFlag{Name: "duration", Value: 20 * time.Second, Usage: "length of the steady phase of each run"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "runs per dialect; figures are medians over them"},
			&cli.Float64Flag{Name: "rate", Value: 500, Usage: "events per second appended in the steady phase"},
			&cli.DurationFlag{Name: "fe-latency", Value: 2 * time.Millisecond, Usage: "time each fake FE takes per statement (doris) or batch (native)"},
			&cli.IntFlag{Name: "batch-size", Value: 1000, Usage: "catalogs[].batch_size of the sidecars and of the raw fetch loop"},
			&cli.DurationFlag{Name: "poll-interval", Value: time.Second, Usage: "catalogs[].poll_interval of the sidecars"},
			&cli.DurationFlag{Name: "busy-poll-interval", Value: 25 * time.Millisecond, Usage: "catalogs[].busy_poll_interval of the sidecars (equal to --poll-interval: a fixed interval)"},
			&cli.DurationFlag{Name: "idle", Value: 10 * time.Second, Usage: "length of the idle phase after the steady one, counting the metastore calls (0: none)"},
			&cli.StringFlag{Name: "dialects", Value: "doris,native", Usage: "comma-separated dialects to measure"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of the table"},
			&cli.StringFlag{Name: "json-file", Usage: "also write the JSON object to this file"},
			&cli.StringFlag{Name: "profile-dir", Usage: "write each sidecar's CPU and allocation profiles (pprof) into this directory"},
		},
		Action: func(c *cli.Context) error {
			o := benchOptions{
				events: c.Int("events"), steady: c.Duration("duration"), runs: c.Int("runs"), rate: c.Float64("rate"),
				feLatency: c.Duration("fe-latency"), batchSize: c.Int("batch-size"), poll: c.Duration("poll-interval"),
				busyPoll: c.Duration("busy-poll-interval"), idle: c.Duration("idle"),
				dialects: config.SplitList(c.String("dialects")), profileDir: c.String("profile-dir"),
				command: "hmssync " + strings.Join(os.Args[1:], " "),
			}
			if err := o.check(); err != nil {
				return err
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			rep, err := runBench(ctx, o, c.App.ErrWriter)
			if err != nil {
				return err
			}
			rep.unmeasured()
			if p := c.String("json-file"); p != "" {
				data, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					return err
				}
				if err := os.WriteFile(p, append(data, '\n'), 0o644); err != nil {
					return fmt.Errorf("bench: --json-file: %w", err)
				}
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			rep.writeTable(c.App.Writer)
			return nil
		},
	}
}

// benchOptions are the bench's settings.
type benchOptions struct {
	events     int
	steady     time.Duration
	runs       int
	rate       float64
	feLatency  time.Duration
	batchSize  int
	poll       time.Duration
	busyPoll   time.Duration
	idle       time.Duration
	dialects   []string
	profileDir string
	command    string
}

func (o benchOptions) check() error {
	var bad []string
	if o.events < 1 {
		bad = append(bad, fmt.Sprintf("--events %d: want at least 1", o.events))
	}
	if o.runs < 1 {
		bad = append(bad, fmt.Sprintf("--runs %d: want at least 1", o.runs))
	}
	if o.rate <= 0 || o.steady <= 0 || o.rate*o.steady.Seconds() < 1 {
		bad = append(bad, fmt.Sprintf("--rate %g for --duration %s: want at least one event in the steady phase", o.rate, o.steady))
	}
	if o.batchSize < 1 || o.batchSize > 100000 {
		bad = append(bad, fmt.Sprintf("--batch-size %d: want 1 to 100000", o.batchSize))
	}
	if o.poll < 10*time.Millisecond || o.poll > time.Hour {
		bad = append(bad, fmt.Sprintf("--poll-interval %s: want 10ms to 1h", o.poll))
	}
	if o.busyPoll < time.Millisecond || o.busyPoll > o.poll {
		bad = append(bad, fmt.Sprintf("--busy-poll-interval %s: want 1ms up to --poll-interval %s", o.busyPoll, o.poll))
	}
	if o.idle < 0 {
		bad = append(bad, fmt.Sprintf("--idle %s: want 0 or more", o.idle))
	}
	if o.feLatency < 0 {
		bad = append(bad, fmt.Sprintf("--fe-latency %s: want 0 or more", o.feLatency))
	}
	if len(o.dialects) == 0 {
		bad = append(bad, "--dialects: want doris, native or both")
	}
	for _, d := range o.dialects {
		if d != "doris" && d != "native" {
			bad = append(bad, fmt.Sprintf("--dialects: %q is not doris or native", d))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench: %s", strings.Join(bad, "; "))
	}
	return nil
}

// runBench runs every dialect's topology o.runs times and reports the medians.
func runBench(ctx context.Context, o benchOptions, progress io.Writer) (*benchReport, error) {
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(progress, "bench %6.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	rep := &benchReport{
		Machine: fmt.Sprintf("%d cores, %s", runtime.NumCPU(), machineDescription()), GoVersion: runtime.Version(),
		LoadBefore: loadAverage(), Command: o.command, Events: o.events, Runs: o.runs, BatchSize: o.batchSize,
		PollIntervalMS: millis(o.poll), BusyPollIntervalMS: millis(o.busyPoll), IdleSeconds: o.idle.Seconds(), FELatencyMS: millis(o.feLatency), SteadyRate: o.rate, SteadySeconds: o.steady.Seconds(),
		Dialects: map[string]*benchFigures{}, InFE: inFECeiling(),
	}
	say("load average %s on %s", rep.LoadBefore, rep.Machine)

	dir, err := os.MkdirTemp("", "hmssync-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: --profile-dir: %w", err)
		}
		f, err := os.Create(filepath.Join(o.profileDir, "bench.cpu.pprof"))
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

	say("generating %d events of the bench mix", o.events)
	tmpl, err := newBenchTemplate(o.events)
	if err != nil {
		return nil, err
	}
	defer tmpl.close()
	env := &benchEnv{o: o, etcd: etcd.Endpoints(), cli: cli, tmpl: tmpl, dir: dir, say: say}

	var raws []float64
	samples := map[string][]runSample{}
	for run := 1; run <= o.runs; run++ {
		raw, err := rawFetchRate(ctx, tmpl, o.batchSize)
		if err != nil {
			return nil, err
		}
		raws = append(raws, raw)
		say("run %d/%d: raw fetch %.0f events/s (batch size %d)", run, o.runs, raw, o.batchSize)
		for _, d := range o.dialects {
			s, err := env.runTopology(ctx, d, run)
			if err != nil {
				return nil, err
			}
			samples[d] = append(samples[d], s)
		}
	}
	rep.RawFetchEPS = median(raws)
	for _, d := range o.dialects {
		rep.Dialects[d] = figuresOf(samples[d], rep.RawFetchEPS)
	}
	rep.headline(o.dialects)
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
