package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/embedetcd"
)

// Options are the demo's knobs (the flags of `hmssync demo`).
type Options struct {
	// Dialect is native (every sidecar applies to its own FE) or doris (a
	// Doris-like FE cluster; only the master applies).
	Dialect string
	// Workload is how long the metastore workload runs, at Rate changes per
	// second.
	Workload time.Duration
	Rate     float64
	// Failover kills the master midway (and restarts it once another took over).
	Failover bool
	// Timeout is how long the FEs have to converge before Run fails.
	Timeout time.Duration
	// Live redraws a view in place (a terminal); otherwise Out gets progress lines.
	Live bool
	Out  io.Writer
	// Version is what the sidecars report in /status.
	Version string
}

// catalog is the one catalog the demo synchronises.
const catalog = "hive"

// world is what the sidecars run against: etcd, the metastore and the FEs.
type world struct {
	etcd      *embedetcd.Server
	hms       *hmstest.Server
	fes       []*fetest.Server
	feCluster *fetest.Cluster // doris only: the three FEs share one cache
	close     []func()
}

func (w *world) Close() {
	for i := len(w.close) - 1; i >= 0; i-- {
		w.close[i]()
	}
}

// run is one demo: its options, its clock and where its story is told.
type run struct {
	o     Options
	start time.Time
	view  *view
}

// say reports a step of the story: a line of its own in plain mode, the view's
// event list on a terminal.
func (r *run) say(format string, args ...any) {
	line := fmt.Sprintf("%6.1fs  %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
	if r.view != nil && r.o.Live {
		r.view.events = append(r.view.events, line)
		return
	}
	fmt.Fprintln(r.o.Out, line)
}

// Run starts everything embedded (etcd, a fake metastore with a workload, three
// fake FEs, three sidecars built as `run` builds them), shows their progress,
// kills the master midway when o.Failover, and returns nil once every FE holds
// the metastore's state, an error if they do not by o.Timeout.
func Run(ctx context.Context, o Options) error {
	r := &run{o: o, start: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// The sidecars log warnings and errors only, to stderr, so that the view
	// stays readable; the failover's "no longer master" shows up there.
	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.Lock(os.Stderr), zap.ErrorLevel))

	w, err := r.startWorld(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	members, err := memberConfigs(w, o.Dialect)
	if err != nil {
		return err
	}
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()
	for _, m := range members {
		if err := m.start(ctx, log, o.Version); err != nil {
			return err
		}
	}
	r.say("three sidecars started; electing a master")

	// The workload runs in the background for o.Workload.
	wctx, stopWorkload := context.WithTimeout(ctx, o.Workload)
	defer stopWorkload()
	wdone := make(chan error, 1)
	go func() { wdone <- (hmstest.Workload{Rate: o.Rate, Seed: 2}).Run(wctx, w.hms) }()
	r.say("workload running for %s at %.0f changes/s", o.Workload, o.Rate)

	r.view = &view{o: o, members: members, hms: w.hms, fes: w.fes, feCluster: w.feCluster, start: r.start}
	return r.watch(ctx, w, members, log, wdone)
}

// startWorld starts the embedded etcd, the metastore (with a warehouse in it
// already) and the FEs; the caller closes the world.
func (r *run) startWorld(ctx context.Context) (w *world, err error) {
	w = &world{}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	dir, err := os.MkdirTemp("", "hmssync-demo-")
	if err != nil {
		return w, err
	}
	w.close = append(w.close, func() { os.RemoveAll(dir) })
	if w.etcd, err = embedetcd.Start(ctx, embedetcd.Config{Dir: dir}); err != nil {
		return w, err
	}
	w.close = append(w.close, w.etcd.Close)
	r.say("embedded etcd at %s", strings.Join(w.etcd.Endpoints(), ","))

	w.hms = hmstest.NewServer()
	w.close = append(w.close, func() { w.hms.Close() })
	// A warehouse exists before the sidecars start: their first sync is a full
	// refresh of it, everything after is applied event by event.
	if err := (hmstest.Workload{Seed: 1, Databases: 2, Tables: 10, Events: 40}).Run(ctx, w.hms); err != nil {
		return w, fmt.Errorf("demo metastore set-up: %w", err)
	}
	r.say("fake metastore at %s (%d events so far)", w.hms.URI(), w.hms.CurrentEventID())

	feOpts := fetest.Options{Loader: func(ctx context.Context, catalog string) (fetest.Truth, error) { return w.hms.Snapshot(), nil }}
	if r.o.Dialect == "doris" {
		w.feCluster = fetest.NewCluster(3, feOpts)
		w.close = append(w.close, w.feCluster.Close)
		w.fes = w.feCluster.Servers()
		r.say("Doris-like FE cluster (3 endpoints, one shared cache): %s", strings.Join(w.feCluster.URLs(), " "))
		return w, nil
	}
	for i := 0; i < 3; i++ {
		fe := fetest.NewServer(feOpts)
		w.close = append(w.close, fe.Close)
		w.fes = append(w.fes, fe)
	}
	r.say("three independent fake FEs (native protocol)")
	return w, nil
}

// memberConfigs configures the three sidecars, one per FE, with timings short
// enough for a failover to show within seconds.
func memberConfigs(w *world, dialect string) ([]*member, error) {
	members := make([]*member, 3)
	for i := range members {
		cfg := config.Default()
		cfg.Cluster = "demo"
		cfg.Member = fmt.Sprintf("sidecar-%d", i+1)
		cfg.Etcd.Endpoints = w.etcd.Endpoints()
		cfg.Etcd.LeaseTTL = 2 * time.Second
		cfg.Etcd.RequestTimeout = 500 * time.Millisecond
		cfg.FE.URL = w.fes[i].URL
		cfg.FE.Dialect = dialect
		cfg.FE.Timeout = 5 * time.Second
		cfg.FE.HealthInterval = 200 * time.Millisecond
		cfg.FE.UnhealthyGrace = 2 * time.Second
		cat := config.CatalogDefaults(catalog)
		cat.HMSURIs, cat.BatchSize, cat.PollInterval, cat.HMSTimeout = []string{w.hms.URI()}, 100, 100*time.Millisecond, 5*time.Second
		cfg.Catalogs = []config.Catalog{cat}
		cfg.Retry = config.Retry{Initial: 50 * time.Millisecond, Max: time.Second, AuthInterval: 2 * time.Second}
		cfg.HTTP.Listen = "127.0.0.1:0"
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("demo configuration: %w", err)
		}
		members[i] = &member{name: cfg.Member, fe: w.fes[i], cfg: cfg}
	}
	return members, nil
}

// watch shows the progress four times a second, kills and restarts the master
// (o.Failover), and ends once the workload is done and every FE holds the
// metastore's state, or with an error when ctx ends first.
func (r *run) watch(ctx context.Context, w *world, members []*member, log *zap.Logger, wdone chan error) error {
	o := r.o
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	failoverAt := r.start.Add(o.Workload / 2)
	killed := (*member)(nil)
	workloadDone := false
	lastPlain := time.Time{}
	for {
		select {
		case <-ctx.Done():
			if o.Live {
				r.view.draw(r.say, true)
			}
			why := r.view.divergence()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("demo: FEs not converged after %s: %s", o.Timeout, why)
			}
			return fmt.Errorf("demo interrupted before convergence: %s", why)
		case err := <-wdone:
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("demo workload: %w", err)
			}
			workloadDone = true
			wdone = nil
			r.say("workload finished at event %d; waiting for every FE to converge", w.hms.CurrentEventID())
		case <-tick.C:
		}
		now := time.Now()
		if o.Failover && killed == nil && now.After(failoverAt) {
			if m := masterOf(members); m != nil {
				killed = m
				r.say("killing the master %s (no resignation: the others wait for its %s lease to expire)", m.name, m.cfg.Etcd.LeaseTTL)
				m.kill()
			}
		}
		if killed != nil && killed.state == "killed" {
			if m := masterOf(members); m != nil && m != killed {
				r.say("%s took over as master; restarting %s, which resumes from its durable cursor", m.name, killed.name)
				if err := killed.start(ctx, log, o.Version); err != nil {
					return err
				}
			}
		}
		if o.Live {
			r.view.draw(r.say, false)
		} else if now.Sub(lastPlain) >= time.Second {
			r.view.plain(r.say)
			lastPlain = now
		}
		if workloadDone && (killed == nil || killed.state == "running") {
			if why := r.view.divergence(); why == "" {
				if o.Live {
					r.view.draw(r.say, true)
					r.view = nil // the verdict goes below the view
				}
				r.say("converged: every FE holds the metastore's %d databases at event %d (%.1fs)", len(w.hms.Snapshot()), w.hms.CurrentEventID(), time.Since(r.start).Seconds())
				return nil
			}
		}
	}
}
