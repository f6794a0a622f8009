// Package agent is the sync driver of SPEC §2: one loop per catalog, each following
// the member's role (master or follower), plus the member's operating surface
// (health, status, metrics). It knows its collaborators only through the small
// interfaces in ports.go.
package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
)

// Agent is one sidecar's driver.
type Agent struct {
	cfg        Config
	log        *zap.Logger
	m          *metrics
	retry      Retry
	scope      applier.Scope
	stuckAfter time.Duration
	health     *FEHealth
	pause      *pauseWatch
	loops      []*catalogLoop
	waits      *waitLimits
	warnings   catalogWarnings
	running    atomic.Bool
}

// New checks cfg and builds the driver; Run starts it.
func New(cfg Config) (*Agent, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, m: newMetrics(), retry: cfg.Retry.orDefault(), stuckAfter: cfg.StuckAfter}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	a.log = a.log.With(zap.String("member", cfg.Member))
	if a.stuckAfter <= 0 {
		a.stuckAfter = 2 * time.Minute
	}
	a.scope = cfg.Scope
	if a.scope == "" {
		a.scope = cfg.Applier.Scope()
	}
	a.health = cfg.FEHealth
	if a.health == nil {
		a.health = NewFEHealth(cfg.Applier, 5*time.Second, 5*time.Second, a.log)
	}
	// Read at each scrape rather than pushed by the checker: the FEHealth is
	// shared with the elector's gate and needs no hook of the agent's.
	a.m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "hmssync", Name: "fe_healthy", Help: "1 if the last FE check succeeded (reachable and authenticated).",
	}, func() float64 {
		if a.health.Healthy() {
			return 1
		}
		return 0
	}))
	a.pause = newPauseWatch(cfg.Store, a.m, a.log)
	// SPEC §7's watch restarts: the store re-establishes its watches itself, so
	// it is the one that counts them.
	if wr, ok := cfg.Store.(WatchRestartCounter); ok {
		a.m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "hmssync", Name: "watch_restarts_total",
			Help: "Times an etcd watch of this member (master cursors, pause key) was re-established: compaction, lost etcd leader, broken stream, or no answer from etcd within the freshness bound.",
		}, func() float64 { return float64(wr.WatchRestarts()) }))
	}
	if ow, ok := cfg.Status.(StatusWriteObserver); ok {
		ow.ObserveWrites(a.m.observeStatusPublish)
	}
	a.waits = newWaitLimits(cfg, a.m.reg)
	for _, c := range cfg.Catalogs {
		a.loops = append(a.loops, newCatalogLoop(a, c))
	}
	return a, nil
}

// Run drives the sidecar until ctx ends, then shuts down in order: the catalog
// loops stop (a batch in flight is abandoned; it is applied again later, which is
// harmless), then the member leaves the election, which makes a master resign so
// that a successor takes over at once. Every step of the shutdown is bounded, also
// when etcd is unreachable: resignTimeout bounds leaving the election. Failures
// while running are the loops' to retry and /readyz's to report, never Run's.
func (a *Agent) Run(ctx context.Context, resignTimeout time.Duration) {
	if resignTimeout <= 0 {
		resignTimeout = 5 * time.Second
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	var bgWG sync.WaitGroup
	goBG := func(f func(context.Context)) {
		bgWG.Add(1)
		go func() { defer bgWG.Done(); f(bg) }()
	}
	goBG(a.health.Run)
	goBG(a.pause.run)
	goBG(a.trackRole)
	goBG(a.refreshLag)
	for _, l := range a.loops {
		goBG(l.watch.run)
	}
	if a.cfg.Status != nil {
		goBG(func(ctx context.Context) {
			if err := a.cfg.Status.Run(ctx); err != nil {
				a.log.Warn("status publisher ended", zap.Error(err))
			}
		})
		goBG(a.publishStatus)
	}

	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	electDone := make(chan struct{})
	go func() {
		defer close(electDone)
		if err := a.cfg.Elector.Run(electCtx); err != nil && electCtx.Err() == nil {
			a.log.Error("election ended", zap.Error(err))
		}
	}()

	a.running.Store(true)
	a.log.Info("sidecar running", zap.String("cluster", a.cfg.Cluster), zap.String("scope", string(a.scope)), zap.Int("catalogs", len(a.loops)))
	var loopWG sync.WaitGroup
	for _, l := range a.loops {
		loopWG.Add(1)
		go func() { defer loopWG.Done(); l.run(ctx) }()
	}
	<-ctx.Done()
	loopWG.Wait()
	a.running.Store(false)

	// Leaving the election resigns a master (the elector revokes its lease, so
	// a successor wins in milliseconds); the elector bounds that by its request
	// timeout even when etcd is unreachable, and resignTimeout bounds the wait.
	_, wasMaster := a.cfg.Elector.Current()
	start := time.Now()
	stopElect()
	select {
	case <-electDone:
		if wasMaster {
			a.log.Info("resigned the master role", zap.Duration("took", time.Since(start)))
		}
	case <-time.After(resignTimeout):
		a.log.Warn("election did not end in time; exiting anyway (a successor takes over when the lease expires)")
	}
	stopBG()
	bgWG.Wait()
	a.log.Info("sidecar stopped")
}

// trackRole logs role changes and keeps the role metrics.
func (a *Agent) trackRole(ctx context.Context) {
	was := false
	for {
		changed := a.cfg.Elector.Changed()
		_, master := a.cfg.Elector.Current()
		if master != was {
			a.m.leaderChanges.Inc()
			if master {
				a.log.Info("became master")
			} else {
				a.log.Info("no longer master", zap.String("leader", leaderName(a.cfg.Elector.Leader(), a.cfg.Member)))
			}
			was = master
		}
		if master {
			a.m.role.WithLabelValues("master").Set(1)
			a.m.role.WithLabelValues("follower").Set(0)
		} else {
			a.m.role.WithLabelValues("master").Set(0)
			a.m.role.WithLabelValues("follower").Set(1)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// publishStatus hands the member's status to the publisher every StatusInterval
// and at once on a role change.
func (a *Agent) publishStatus(ctx context.Context) {
	every := a.cfg.StatusInterval
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		changed := a.cfg.Elector.Changed()
		a.cfg.Status.Update(a.memberStatus())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-changed:
		}
	}
}

func (a *Agent) memberStatus() cursorstore.MemberStatus {
	s := a.Status()
	ms := cursorstore.MemberStatus{Member: s.Member, Role: s.Role, FEURL: s.FE.URL, Version: s.Version, Catalogs: map[string]cursorstore.CatalogProgress{}}
	for _, c := range s.Catalogs {
		cs := cursorstore.CatalogProgress{Cursor: c.Cursor, Lag: c.LagEvents, SelfHeals: c.SelfHeals}
		// The last error is published until the catalog applies a batch
		// after it: `hmssync status` shows what still matters.
		if c.LastErrorAt != nil && (c.LastAppliedAt == nil || !c.LastAppliedAt.After(*c.LastErrorAt)) {
			cs.LastError, cs.LastErrorTime = c.LastError, *c.LastErrorAt
		}
		if n := len(c.LastHeals); n > 0 {
			cs.LastHeal, cs.LastHealTime = c.LastHeals[n-1].summary(), c.LastHeals[n-1].At
		}
		publishMetastore(&cs, s.Role, c)
		ms.Catalogs[c.Name] = cs
	}
	return ms
}

// refreshLag recomputes the lag figures every second, so that lag_seconds keeps
// growing while a loop is stuck behind a failure.
func (a *Agent) refreshLag(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, l := range a.loops {
				l.updateLag()
				l.rec.expireHealLoops(now)
			}
		}
	}
}

// leaderName is what the logs say about the leader seen by a member that is not
// master: never the member itself (a value from before its own term ended).
func leaderName(leader, self string) string {
	if leader == "" || leader == self {
		return "unknown yet"
	}
	return leader
}
