package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/embedetcd"
)

// Run is `hmssync run` once the configuration is loaded: it runs one sidecar
// until ctx ends (a signal), with its HTTP surface and, when configured, its
// embedded etcd. level is the logger's, changed by /log/level; version is
// reported in /status.
func Run(ctx context.Context, cfg config.Config, sec config.Secrets, log *zap.Logger, level zap.AtomicLevel, version string) error {
	// finished disarms the shutdown watchdog below once everything, the
	// embedded etcd included, has been closed.
	finished := make(chan struct{})
	defer close(finished)
	if cfg.Etcd.EmbeddedDir != "" {
		srv, err := embedetcd.Start(ctx, embedetcd.Config{Dir: cfg.Etcd.EmbeddedDir, ClientAddr: cfg.Etcd.EmbeddedListen})
		if err != nil {
			return err
		}
		defer srv.Close()
		cfg.Etcd.Endpoints = srv.Endpoints()
		log.Info("embedded etcd running", zap.Strings("endpoints", cfg.Etcd.Endpoints), zap.String("dir", cfg.Etcd.EmbeddedDir))
	}
	sc, err := New(ctx, cfg, sec, log, version)
	if err != nil {
		return err
	}
	defer sc.Close()

	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen %q: %w", cfg.HTTP.Listen, err)
	}
	pprofAccess := agent.PprofAccess(cfg.HTTP.Pprof)
	hs := agent.NewHTTPServer(agent.WithPprof(sc.Agent.Handler(&agent.LogLevel{Level: &level, AllowRemote: cfg.HTTP.AllowRemoteLogLevel}), pprofAccess))
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", zap.Error(err))
		}
	}()
	log.Info("http surface listening", zap.String("addr", ln.Addr().String()), zap.String("pprof", string(pprofAccess)))

	// Whatever happens after the signal, the process ends within the shutdown
	// timeout: an orchestrator waiting on a hung sidecar helps nobody.
	go func() {
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		t := time.NewTimer(cfg.ShutdownTimeout + time.Second)
		defer t.Stop()
		select {
		case <-t.C:
			log.Error("shutdown did not finish in time; exiting", zap.Duration("shutdown_timeout", cfg.ShutdownTimeout))
			_ = log.Sync()
			os.Exit(1)
		case <-finished:
		}
	}()

	// One live process per member name: taken before the agent does anything,
	// refused (the process exits with the other holder named) while another
	// holds it.
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	hold, err := sc.HoldMember(ctx, net.JoinHostPort(host, port), log)
	if err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer hold.Release()
	warnCtx, stopWarn := context.WithCancel(ctx)
	warned := make(chan struct{})
	go func() { defer close(warned); warnDoubleSync(warnCtx, cfg, sec, log, sc.Agent.SetCatalogWarning) }()
	defer func() { stopWarn(); <-warned }()

	// The metastores' event settings, logged as warnings where wrong, beside
	// the agent's start (not before it: a metastore that is down must not
	// hold the sidecar up).
	settingsDone := make(chan struct{})
	go func() {
		defer close(settingsDone)
		sc.logEventSettings(ctx, log)
	}()
	defer func() { <-settingsDone }()
	sc.Agent.Run(ctx, cfg.ShutdownTimeout/2)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}
