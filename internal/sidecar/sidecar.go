package sidecar

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/preflight"
	"github.com/hmssync/hmssync/internal/retry"
)

// Sidecar is one configured agent with the connections it owns. `run` builds
// one; `demo` and `bench` build several from the same code, so that they
// exercise the production wiring.
type Sidecar struct {
	Agent *agent.Agent
	Etcd  *clientv3.Client
	// stopEndpoints ends the background check that keeps Etcd's endpoints to
	// the members with a leader (keepToLeaderMembers).
	stopEndpoints func()
	hms           []*hms.Client
	settings      []settingsCheck // one per catalog (eventsettings.go)
	applier       applier.Applier
	store         *cursorstore.Store
	member        string
	leaseTTL      time.Duration
}

// New connects to etcd (checking it answers), builds the applier, the FE
// health check, the election, the cursor store and one metastore client per
// catalog, and the agent over them. cfg is validated (config.Load or
// Config.Validate); version is reported in /status. The caller runs
// s.Agent and closes s.
func New(ctx context.Context, cfg config.Config, sec config.Secrets, log *zap.Logger, version string) (*Sidecar, error) {
	cli, err := EtcdClient(ctx, cfg, sec, log)
	if err != nil {
		return nil, err
	}
	sc := &Sidecar{Etcd: cli,
		stopEndpoints: keepToLeaderMembers(cli, cfg.Etcd.Endpoints, cfg.Etcd.RequestTimeout, log.Named("etcd-endpoints"))}
	ok := false
	defer func() {
		if !ok {
			sc.Close()
		}
	}()

	feClient, err := config.FEHTTPClient(cfg.FE)
	if err != nil {
		return nil, err // validated at load; a file may have changed since
	}
	ap, err := applier.New(applier.Config{Client: feClient,
		Dialect: cfg.FE.Dialect, URL: cfg.FE.URL, User: cfg.FE.User, Password: sec.FEPassword,
		Timeout: cfg.FE.Timeout, Logger: log.Named("applier"),
	})
	if err != nil {
		return nil, fmt.Errorf("fe: %w", err)
	}
	sc.applier = ap
	// One FE health check, shared: it gates the candidacy (the elector) and
	// feeds /readyz (the agent runs it).
	health := agent.NewFEHealth(ap, cfg.FE.HealthInterval, cfg.FE.Timeout, log.Named("fe").With(zap.String("member", cfg.Member)))

	store := cursorstore.New(cli, cfg.Etcd.Prefix, cfg.Cluster, cfg.Etcd.RequestTimeout, log.Named("cursorstore"))
	if err := store.Err(); err != nil {
		return nil, fmt.Errorf("etcd.prefix %q, cluster %q: %w", cfg.Etcd.Prefix, cfg.Cluster, err)
	}
	sc.store, sc.member, sc.leaseTTL = store, cfg.Member, cfg.Etcd.LeaseTTL
	el, err := election.New(election.Config{
		Client: cli, Prefix: store.ElectionPrefix(), Name: cfg.Member,
		LeaseTTL: cfg.Etcd.LeaseTTL, RequestTimeout: cfg.Etcd.RequestTimeout,
		CanLead: health.Healthy, GateGrace: cfg.FE.UnhealthyGrace,
		Logger: log.Named("election"), // the elector adds the member key itself
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
		krb, err := KerberosConfig(cc.HMSAuth, config.CatalogAuthKey(i))
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", cc.Name, err) // validated at load; a file may have changed since
		}
		hc, err := hms.NewClient(hms.ClientConfig{URIs: cc.HMSURIs, DialTimeout: min(cc.HMSTimeout, 10*time.Second), CallTimeout: cc.HMSTimeout,
			Framed: cc.HMSFramed, TLS: tlsCfg, Kerberos: krb, UGIUser: cc.HMSUser, Logger: hmsLog})
		if err != nil {
			return nil, fmt.Errorf("catalog %s: metastore client: %w", cc.Name, err)
		}
		sc.hms = append(sc.hms, hc)
		sc.settings = append(sc.settings, settingsCheck{client: hc,
			catalog: preflight.Catalog{Name: cc.Name, URIs: cc.HMSURIs, Kerberos: krb, UGIUser: cc.HMSUser, Timeout: cc.HMSTimeout}})
		cat := agent.Catalog{
			Name: cc.Name, Source: hc, Decoder: message.NewDecoder(cc.HMSCatalog),
			BatchSize: cc.BatchSize, PollInterval: cc.PollInterval, BusyPollInterval: cc.BusyPollInterval(), SkipEventTypes: cc.SkipEventTypes,
			CallTimeout: cc.HMSTimeout, NoPushdown: !cc.FilterPushdown, TxnTimeout: cc.TxnTimeout, TxnLookback: txnLookback(cc.TxnLookbackEvents),
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
		Retry:              agent.Retry{Initial: cfg.Retry.Initial, Max: cfg.Retry.Max, AuthInterval: cfg.Retry.AuthInterval},
		SelfHealMaxPerHour: cfg.SelfHeal.MaxPerHour,
		StuckAfter:         2*maxCall + 30*time.Second,
		WaitMaxTimeout:     cfg.HTTP.WaitMaxTimeout, MaxWaiters: cfg.HTTP.MaxWaiters,
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	sc.Agent = a
	ok = true
	return sc, nil
}

// HoldMember takes the member name for this process (cursorstore.HoldMember,
// bound to a lease of etcd.lease_ttl) before the agent runs, so that two
// sidecars configured with one member never both sync. address is where this
// process serves HTTP, for the other one's error. While etcd does not answer it
// keeps trying (a sidecar starts before etcd, see Run). When another process
// holds the name it waits one lease TTL (and a second) for the name to be
// released: a predecessor that was killed, and that this process replaces,
// holds it until its lease expires; a live one keeps renewing it, and then the
// *cursorstore.MemberHeldError is returned. ctx's error when ctx ends first.
func (s *Sidecar) HoldMember(ctx context.Context, address string, log *zap.Logger) (*cursorstore.MemberHold, error) {
	h := cursorstore.MemberHolder{Address: address, PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second)}
	delay := retry.NewDelay(100*time.Millisecond, s.leaseTTL)
	var heldSince time.Time
	for {
		hold, err := s.store.HoldMember(ctx, s.member, h, s.leaseTTL)
		var held *cursorstore.MemberHeldError
		switch {
		case err == nil:
			return hold, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &held) && heldSince.IsZero():
			heldSince = time.Now()
			log.Warn("the member name is held by another process; waiting one lease TTL for it to be released (a killed predecessor's lease expires by then, a live process keeps it)",
				zap.String("key", s.store.HolderKey(s.member)), zap.Duration("lease_ttl", s.leaseTTL), zap.Error(err))
			delay.Wait(ctx)
			continue
		case errors.As(err, &held):
			if time.Since(heldSince) > s.leaseTTL+time.Second {
				return nil, err
			}
			delay.Wait(ctx)
			continue
		}
		log.Warn("cannot take the member name in etcd yet; retrying", zap.String("key", s.store.HolderKey(s.member)), zap.Error(err))
		delay.Wait(ctx)
	}
}

// Close releases the connections.
func (s *Sidecar) Close() {
	for _, h := range s.hms {
		_ = h.Close()
	}
	if s.stopEndpoints != nil {
		s.stopEndpoints()
	}
	if s.Etcd != nil {
		_ = s.Etcd.Close()
	}
}

// txnLookback is agent.Catalog.TxnLookback for catalogs[].txn_lookback_events:
// the key's 0 is no look-back, the agent's zero its default.
func txnLookback(events int) int {
	if events == 0 {
		return -1
	}
	return events
}
