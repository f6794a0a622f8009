package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/embedetcd"
	"github.com/hmssync/hmssync/internal/sidecar"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run etcd, a fake metastore with a workload, three fake FEs and three sidecars in one process",
		Description: `Starts everything embedded: a single-node etcd, a fake Hive Metastore with a
running workload, three fake FEs and three sidecars built exactly as 'run' builds
them. Shows each member's role, cursor and lag and what each FE applied, kills the
master midway to show the failover (and restarts it, to show the resume from its
durable cursor), and exits 0 once every FE holds the metastore's state.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dialect", Value: "native", Usage: "native (every sidecar applies to its own FE) or doris (a Doris-like FE cluster; only the master applies)"},
			&cli.DurationFlag{Name: "workload", Value: 6 * time.Second, Usage: "how long the metastore workload runs"},
			&cli.Float64Flag{Name: "rate", Value: 100, Usage: "metastore changes per second during the workload"},
			&cli.BoolFlag{Name: "no-failover", Usage: "do not kill the master midway"},
			&cli.DurationFlag{Name: "timeout", Value: 45 * time.Second, Usage: "give up (exit non-zero) if the FEs have not converged by then"},
			&cli.BoolFlag{Name: "plain", Usage: "print progress lines even on a terminal"},
		},
		Action: func(c *cli.Context) error {
			d := c.String("dialect")
			if d != "native" && d != "doris" {
				return fmt.Errorf("--dialect %q: want native or doris", d)
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			live := !c.Bool("plain") && stdoutIsTerminal()
			return runDemo(ctx, demoOptions{
				dialect: d, workload: c.Duration("workload"), rate: c.Float64("rate"),
				failover: !c.Bool("no-failover"), timeout: c.Duration("timeout"), live: live, out: c.App.Writer,
			})
		},
	}
}

type demoOptions struct {
	dialect  string
	workload time.Duration
	rate     float64
	failover bool
	timeout  time.Duration
	live     bool
	out      io.Writer
}

const demoCatalog = "hive"

// demoMember is one sidecar of the demo and its FE.
type demoMember struct {
	name string
	fe   *fetest.Server
	cfg  config.Config

	mu     sync.Mutex
	sc     *sidecar.Sidecar
	cancel context.CancelFunc
	done   chan struct{}
	state  string // running, killed
}

func runDemo(ctx context.Context, o demoOptions) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	// The sidecars log warnings and errors only, to stderr, so that the view
	// stays readable; the failover's "no longer master" shows up there.
	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.Lock(os.Stderr), zap.ErrorLevel))
	var view *demoView
	// say reports a step of the story: a line of its own in plain mode, the
	// view's event list on a terminal.
	say := func(format string, args ...any) {
		line := fmt.Sprintf("%6.1fs  %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
		if view != nil && o.live {
			view.events = append(view.events, line)
			return
		}
		fmt.Fprintln(o.out, line)
	}

	dir, err := os.MkdirTemp("", "hmssync-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	etcd, err := embedetcd.Start(ctx, embedetcd.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer etcd.Close()
	say("embedded etcd at %s", strings.Join(etcd.Endpoints(), ","))

	hmsSrv := hmstest.NewServer()
	defer hmsSrv.Close()
	// A warehouse exists before the sidecars start: their first sync is a full
	// refresh of it, everything after is applied event by event.
	if err := (hmstest.Workload{Seed: 1, Databases: 2, Tables: 10, Events: 40}).Run(ctx, hmsSrv); err != nil {
		return fmt.Errorf("demo metastore set-up: %w", err)
	}
	wl := hmstest.Workload{Rate: o.rate, Seed: 2}
	say("fake metastore at %s (%d events so far)", hmsSrv.URI(), hmsSrv.CurrentEventID())

	feOpts := fetest.Options{Loader: func(ctx context.Context, catalog string) (fetest.Truth, error) { return hmsSrv.Snapshot(), nil }}
	var fes []*fetest.Server
	var feCluster *fetest.Cluster
	if o.dialect == "doris" {
		feCluster = fetest.NewCluster(3, feOpts)
		defer feCluster.Close()
		fes = feCluster.Servers()
		say("Doris-like FE cluster (3 endpoints, one shared cache): %s", strings.Join(feCluster.URLs(), " "))
	} else {
		for i := 0; i < 3; i++ {
			fe := fetest.NewServer(feOpts)
			defer fe.Close()
			fes = append(fes, fe)
		}
		say("three independent fake FEs (native protocol)")
	}

	members := make([]*demoMember, 3)
	for i := range members {
		cfg := config.Default()
		cfg.Cluster = "demo"
		cfg.Member = fmt.Sprintf("sidecar-%d", i+1)
		cfg.Etcd.Endpoints = etcd.Endpoints()
		cfg.Etcd.LeaseTTL = 2 * time.Second
		cfg.Etcd.RequestTimeout = 500 * time.Millisecond
		cfg.FE.URL = fes[i].URL
		cfg.FE.Dialect = o.dialect
		cfg.FE.Timeout = 5 * time.Second
		cfg.FE.HealthInterval = 200 * time.Millisecond
		cfg.FE.UnhealthyGrace = 2 * time.Second
		cat := config.CatalogDefaults(demoCatalog)
		cat.HMSURIs, cat.BatchSize, cat.PollInterval, cat.HMSTimeout = []string{hmsSrv.URI()}, 100, 100*time.Millisecond, 5*time.Second
		cfg.Catalogs = []config.Catalog{cat}
		cfg.Retry = config.Retry{Initial: 50 * time.Millisecond, Max: time.Second, AuthInterval: 2 * time.Second}
		cfg.HTTP.Listen = "127.0.0.1:0"
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("demo configuration: %w", err)
		}
		members[i] = &demoMember{name: cfg.Member, fe: fes[i], cfg: cfg}
	}
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()
	for _, m := range members {
		if err := m.start(ctx, log); err != nil {
			return err
		}
	}
	say("three sidecars started; electing a master")

	// The workload runs in the background for o.workload.
	wctx, stopWorkload := context.WithTimeout(ctx, o.workload)
	defer stopWorkload()
	wdone := make(chan error, 1)
	go func() { wdone <- wl.Run(wctx, hmsSrv) }()
	say("workload running for %s at %.0f changes/s", o.workload, o.rate)

	view = &demoView{o: o, members: members, hms: hmsSrv, fes: fes, feCluster: feCluster, start: start}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	failoverAt := start.Add(o.workload / 2)
	killed := (*demoMember)(nil)
	workloadDone := false
	lastPlain := time.Time{}
	for {
		select {
		case <-ctx.Done():
			if o.live {
				view.draw(say, true)
			}
			why := view.divergence()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("demo: FEs not converged after %s: %s", o.timeout, why)
			}
			return fmt.Errorf("demo interrupted before convergence: %s", why)
		case err := <-wdone:
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("demo workload: %w", err)
			}
			workloadDone = true
			wdone = nil
			say("workload finished at event %d; waiting for every FE to converge", hmsSrv.CurrentEventID())
		case <-tick.C:
		}
		now := time.Now()
		if o.failover && killed == nil && now.After(failoverAt) {
			if m := masterOf(members); m != nil {
				killed = m
				say("killing the master %s (no resignation: the others wait for its %s lease to expire)", m.name, m.cfg.Etcd.LeaseTTL)
				m.kill()
			}
		}
		if killed != nil && killed.state == "killed" {
			if m := masterOf(members); m != nil && m != killed {
				say("%s took over as master; restarting %s, which resumes from its durable cursor", m.name, killed.name)
				if err := killed.start(ctx, log); err != nil {
					return err
				}
			}
		}
		if o.live {
			view.draw(say, false)
		} else if now.Sub(lastPlain) >= time.Second {
			view.plain(say)
			lastPlain = now
		}
		if workloadDone && (killed == nil || killed.state == "running") {
			if why := view.divergence(); why == "" {
				if o.live {
					view.draw(say, true)
					view = nil // the verdict goes below the view
				}
				say("converged: every FE holds the metastore's %d databases at event %d (%.1fs)", len(hmsSrv.Snapshot()), hmsSrv.CurrentEventID(), time.Since(start).Seconds())
				return nil
			}
		}
	}
}

func masterOf(ms []*demoMember) *demoMember {
	for _, m := range ms {
		m.mu.Lock()
		sc := m.sc
		m.mu.Unlock()
		if sc != nil && sc.Agent.Status().Role == "master" {
			return m
		}
	}
	return nil
}

func (m *demoMember) start(ctx context.Context, log *zap.Logger) error {
	sc, err := sidecar.New(ctx, m.cfg, config.Secrets{}, log, buildVersion())
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sc.Agent.Run(rctx, 2*time.Second)
	}()
	m.mu.Lock()
	m.sc, m.cancel, m.done, m.state = sc, cancel, done, "running"
	m.mu.Unlock()
	return nil
}

// kill simulates a crash: the etcd connection dies before anything else, so the
// member cannot resign and its lease has to expire.
func (m *demoMember) kill() { m.halt("killed", true) }

// stop is a graceful stop (SIGTERM).
func (m *demoMember) stop() { m.halt("stopped", false) }

func (m *demoMember) halt(state string, crash bool) {
	m.mu.Lock()
	sc, cancel, done := m.sc, m.cancel, m.done
	m.sc, m.state = nil, state
	m.mu.Unlock()
	if sc == nil {
		return
	}
	if crash {
		_ = sc.Etcd.Close()
	}
	cancel()
	<-done
	sc.Close()
}

// demoView renders the state: per member role, cursor and lag; per FE what it
// applied.
type demoView struct {
	o         demoOptions
	members   []*demoMember
	hms       *hmstest.Server
	fes       []*fetest.Server
	feCluster *fetest.Cluster
	start     time.Time
	drawn     bool
	events    []string // the story so far, shown under the table
}

// divergence says why the FEs have not converged yet ("" when they have).
func (v *demoView) divergence() string {
	want := v.hms.Snapshot()
	cur := v.hms.CurrentEventID()
	if v.feCluster != nil {
		if d := fetest.Diff(want, v.feCluster.Snapshot(demoCatalog)); d != "" {
			return "Doris cluster cache differs from the metastore: " + firstLine(d)
		}
		for _, m := range v.members {
			m.mu.Lock()
			sc := m.sc
			m.mu.Unlock()
			if sc != nil && sc.Agent.Status().Catalogs[0].MasterCursor != cur {
				return fmt.Sprintf("master cursor %d, metastore at %d", sc.Agent.Status().Catalogs[0].MasterCursor, cur)
			}
		}
		return ""
	}
	for i, fe := range v.fes {
		if got := fe.AppliedEventID(demoCatalog); got != cur {
			return fmt.Sprintf("FE %d applied up to event %d, metastore at %d", i+1, got, cur)
		}
		if d := fetest.Diff(want, fe.Snapshot(demoCatalog)); d != "" {
			return fmt.Sprintf("FE %d cache differs from the metastore: %s", i+1, firstLine(d))
		}
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

type memberRow struct {
	name, role, state string
	cursor, lag       int64
	refreshes         int
}

func (v *demoView) rows() []memberRow {
	var rows []memberRow
	for _, m := range v.members {
		m.mu.Lock()
		sc, state := m.sc, m.state
		m.mu.Unlock()
		r := memberRow{name: m.name, state: state, role: "-", cursor: -1}
		if sc != nil {
			st := sc.Agent.Status()
			r.role = st.Role
			c := st.Catalogs[0]
			r.cursor, r.lag, r.refreshes = c.Cursor, c.LagEvents, c.FullRefreshes
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return rows
}

func (v *demoView) feLine(i int) string {
	fe := v.fes[i]
	if v.feCluster != nil {
		return fmt.Sprintf("FE %d  %d statements received by this endpoint", i+1, len(fe.Statements()))
	}
	n, full := 0, 0
	for _, b := range fe.Changes() {
		if b.FullRefresh {
			full++
		}
		n += len(b.Changes)
	}
	return fmt.Sprintf("FE %d  applied up to event %-6d  %5d changes, %d full refreshes", i+1, fe.AppliedEventID(demoCatalog), n, full)
}

// draw redraws the live view in place (a terminal).
func (v *demoView) draw(say func(string, ...any), final bool) {
	var b strings.Builder
	if v.drawn {
		b.WriteString("\x1b[H\x1b[J")
	} else {
		b.WriteString("\x1b[2J\x1b[H")
		v.drawn = true
	}
	fmt.Fprintf(&b, "hmssync demo (%s dialect) — %.1fs — metastore at event %d\n\n", v.o.dialect, time.Since(v.start).Seconds(), v.hms.CurrentEventID())
	fmt.Fprintf(&b, "%-10s %-9s %-8s %8s %6s %14s\n", "member", "role", "state", "cursor", "lag", "full refreshes")
	for _, r := range v.rows() {
		fmt.Fprintf(&b, "%-10s %-9s %-8s %8d %6d %14d\n", r.name, r.role, r.state, r.cursor, r.lag, r.refreshes)
	}
	b.WriteString("\n")
	for i := range v.fes {
		b.WriteString(v.feLine(i) + "\n")
	}
	if v.feCluster != nil {
		fmt.Fprintf(&b, "cluster cache: %s\n", convergedWord(fetest.Diff(v.hms.Snapshot(), v.feCluster.Snapshot(demoCatalog)) == ""))
	}
	if !final {
		fmt.Fprintf(&b, "\n%s\n", convergedWord(v.divergence() == ""))
	}
	b.WriteString("\n")
	for _, e := range v.events {
		b.WriteString(e + "\n")
	}
	fmt.Fprint(v.o.out, b.String())
}

func convergedWord(ok bool) string {
	if ok {
		return "in step with the metastore"
	}
	return "catching up"
}

// plain prints one progress line (not a terminal).
func (v *demoView) plain(say func(string, ...any)) {
	var parts []string
	for _, r := range v.rows() {
		if r.state != "running" {
			parts = append(parts, fmt.Sprintf("%s %s", r.name, r.state))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s cursor=%d lag=%d", r.name, r.role, r.cursor, r.lag))
	}
	if v.feCluster == nil {
		var fe []string
		for _, f := range v.fes {
			fe = append(fe, fmt.Sprint(f.AppliedEventID(demoCatalog)))
		}
		parts = append(parts, "FEs applied "+strings.Join(fe, "/"))
	}
	say("hms=%d | %s", v.hms.CurrentEventID(), strings.Join(parts, " | "))
}

func stdoutIsTerminal() bool {
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
