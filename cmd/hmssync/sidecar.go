package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/config"
)

// sidecar is one configured agent with the connections it owns. `run` builds one;
// `demo` builds three from the same code, so the demo exercises the production
// wiring.
type sidecar struct {
	Agent   *agent.Agent
	Etcd    *clientv3.Client
	hms     []*hms.Client
	applier applier.Applier
}

// newSidecar connects to etcd (checking it answers), builds the applier, the
// election, the cursor store and one metastore client per catalog.
func newSidecar(ctx context.Context, cfg config.Config, sec config.Secrets, log *zap.Logger, version string) (*sidecar, error) {
	cli, err := sidecarEtcdClient(ctx, cfg, sec, log)
	if err != nil {
		return nil, err
	}
	sc := &sidecar{Etcd: cli}
	ok := false
	defer func() {
		if !ok {
			sc.Close()
		}
	}()

	// The applier reports each FE request to the agent's metrics; the agent is
	// built from the applier, so the hook reaches it through this variable, set
	// below before anything can apply.
	var ag *agent.Agent
	feClient, err := config.FEHTTPClient(cfg.FE)
	if err != nil {
		return nil, err // validated at load; a file may have changed since
	}
	ap, err := applier.New(applier.Config{Client: feClient,
		Dialect: cfg.FE.Dialect, URL: cfg.FE.URL, User: cfg.FE.User, Password: sec.FEPassword,
		Timeout: cfg.FE.Timeout, Logger: log.Named("applier"),
		Observe: func(catalog string, err error) { ag.ObserveFERequest(catalog, err) },
	})
	if err != nil {
		return nil, fmt.Errorf("fe: %w", err)
	}
	sc.applier = ap
	health := agent.NewFEHealth(ap, cfg.FE.HealthInterval, cfg.FE.Timeout, log.Named("fe").With(zap.String("member", cfg.Member)))

	store := cursorstore.New(cli, cfg.Etcd.Prefix, cfg.Cluster, cfg.Etcd.RequestTimeout, log.Named("cursorstore"))
	if err := store.Err(); err != nil {
		return nil, fmt.Errorf("etcd.prefix %q, cluster %q: %w", cfg.Etcd.Prefix, cfg.Cluster, err)
	}
	el, err := election.New(election.Config{
		Client: cli, Prefix: store.ElectionPrefix(), Name: cfg.Member,
		LeaseTTL: cfg.Etcd.LeaseTTL, RequestTimeout: cfg.Etcd.RequestTimeout,
		CanLead: health.Healthy, GateGrace: cfg.FE.UnhealthyGrace,
		Logger: log.Named("election").With(zap.String("member", cfg.Member)),
	})
	if err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	pub, err := store.NewStatusPublisher(cfg.Member, cfg.Etcd.LeaseTTL, 0)
	if err != nil {
		return nil, fmt.Errorf("member %q: %w", cfg.Member, err)
	}

	var cats []agent.Catalog
	maxCall := max(cfg.FE.Timeout, cfg.Etcd.RequestTimeout)
	for i, cc := range cfg.Catalogs {
		hmsLog := log.Named("hms").With(zap.String("catalog", cc.Name))
		tlsCfg, err := cc.HMSTLS.ClientConfig(config.CatalogTLSKey(i))
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", cc.Name, err) // validated at load; a file may have changed since
		}
		if cc.HMSTLS.InsecureSkipVerify {
			hmsLog.Warn("hms_tls.insecure_skip_verify is on: the metastore's certificate is not checked; use it for testing only")
		}
		krb, err := kerberosConfig(cc.HMSAuth, config.CatalogAuthKey(i))
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", cc.Name, err) // validated at load; a file may have changed since
		}
		hc, err := hms.NewClient(hms.ClientConfig{URIs: cc.HMSURIs, DialTimeout: min(cc.HMSTimeout, 10*time.Second), CallTimeout: cc.HMSTimeout,
			Framed: cc.HMSFramed, TLS: tlsCfg, Kerberos: krb, UGIUser: cc.HMSUser, Logger: hmsLog})
		if err != nil {
			return nil, fmt.Errorf("catalog %s: metastore client: %w", cc.Name, err)
		}
		sc.hms = append(sc.hms, hc)
		cat := agent.Catalog{
			Name: cc.Name, Source: hc, Decoder: hms.Decoder{Catalog: cc.HMSCatalog},
			BatchSize: cc.BatchSize, PollInterval: cc.PollInterval, BusyPollInterval: cc.BusyPollInterval(), SkipEventTypes: cc.SkipEventTypes,
			CallTimeout: cc.HMSTimeout,
		}
		for _, p := range cc.Include {
			re, _ := config.CompileFull(p) // validated
			cat.Include = append(cat.Include, re)
		}
		for _, p := range cc.Exclude {
			re, _ := config.CompileFull(p)
			cat.Exclude = append(cat.Exclude, re)
		}
		cats = append(cats, cat)
		maxCall = max(maxCall, cc.HMSTimeout)
	}
	scope := applier.Scope("")
	if cfg.FE.Scope != "auto" {
		scope = applier.Scope(cfg.FE.Scope)
	}
	a, err := agent.New(agent.Config{
		Cluster: cfg.Cluster, Member: cfg.Member, Version: version, FEURL: cfg.FE.URL,
		Applier: ap, Scope: scope, FEHealth: health, Elector: el, Store: store, Status: pub, Catalogs: cats,
		Retry:      agent.Retry{Initial: cfg.Retry.Initial, Max: cfg.Retry.Max, AuthInterval: cfg.Retry.AuthInterval},
		StuckAfter: 2*maxCall + 30*time.Second,
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	sc.Agent, ag = a, a
	ok = true
	return sc, nil
}

// Close releases the connections.
func (s *sidecar) Close() {
	for _, h := range s.hms {
		_ = h.Close()
	}
	if s.Etcd != nil {
		_ = s.Etcd.Close()
	}
}

// sidecarEtcdConfig is the etcd client configuration of cfg (endpoints, TLS,
// credentials, timeouts), shared by the sidecar and `hmssync check`.
func sidecarEtcdConfig(cfg config.Config, sec config.Secrets, log *zap.Logger) (clientv3.Config, error) {
	ec := clientv3.Config{
		Endpoints:   cfg.Etcd.Endpoints,
		DialTimeout: cfg.Etcd.DialTimeout,
		Username:    cfg.Etcd.Username,
		Password:    sec.EtcdPassword,
		Logger:      log.Named("etcd-client").WithOptions(zap.IncreaseLevel(zap.ErrorLevel)),
		// Keepalive pings no more often than the server's 5 s minimum.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: cfg.Etcd.RequestTimeout,
	}
	if t := cfg.Etcd.TLS; t.CAFile != "" || t.CertFile != "" {
		tc, err := transport.TLSInfo{TrustedCAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}.ClientConfig()
		if err != nil {
			return ec, fmt.Errorf("etcd.tls: %w", err)
		}
		ec.TLS = tc
	}
	return ec, nil
}

// sidecarEtcdClient opens the etcd client and checks, with a deadline, that etcd
// answers: a v3.7 client does not fail on an unreachable endpoint by itself.
// Only an answer that proves the configuration wrong (the credentials refused)
// stops the start-up. An etcd without quorum, or not up yet, is an outage like
// any other: the sidecar starts anyway, stays not ready and keeps trying, as
// sidecars already running ride the outage out; exiting would make a crash loop
// under an orchestrator.
func sidecarEtcdClient(ctx context.Context, cfg config.Config, sec config.Secrets, log *zap.Logger) (*clientv3.Client, error) {
	ec, err := sidecarEtcdConfig(cfg, sec, log)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(ec)
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", cfg.Etcd.Endpoints, err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Etcd.DialTimeout)
	defer cancel()
	if _, err := cli.Get(pctx, path.Join(cfg.Etcd.Prefix, cfg.Cluster, "pause")); err != nil {
		if etcdRefusesCredentials(err) {
			_ = cli.Close()
			return nil, fmt.Errorf("etcd at %v refuses the credentials (etcd.username, etcd.password_file or HMSSYNC_ETCD_PASSWORD): %w", cfg.Etcd.Endpoints, err)
		}
		log.Warn("etcd does not answer yet: starting not ready; the sidecar keeps trying (check etcd.endpoints and the etcd cluster's quorum)",
			zap.Strings("endpoints", cfg.Etcd.Endpoints), zap.Duration("dial_timeout", cfg.Etcd.DialTimeout), zap.Error(err))
	}
	return cli, nil
}

// etcdRefusesCredentials reports whether err is etcd's answer that the user,
// its password or its permissions are wrong: a configuration error, which
// waiting does not fix.
func etcdRefusesCredentials(err error) bool {
	return errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(err, rpctypes.ErrPermissionDenied) ||
		errors.Is(err, rpctypes.ErrUserNotFound) || errors.Is(err, rpctypes.ErrUserEmpty) ||
		errors.Is(err, rpctypes.ErrGRPCAuthFailed) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) ||
		errors.Is(err, rpctypes.ErrGRPCUserNotFound) || errors.Is(err, rpctypes.ErrGRPCUserEmpty)
}
