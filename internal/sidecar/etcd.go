package sidecar

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

	"github.com/hmssync/hmssync/internal/config"
)

// EtcdConfig is the etcd client configuration of cfg (endpoints, TLS,
// credentials, timeouts), shared by the sidecar and `hmssync check`.
func EtcdConfig(cfg config.Config, sec config.Secrets, log *zap.Logger) (clientv3.Config, error) {
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

// EtcdClient opens the etcd client and checks, with a deadline, that etcd
// answers: a v3.7 client does not fail on an unreachable endpoint by itself.
// Only an answer that proves the configuration wrong (the credentials refused)
// stops the start-up. An etcd without quorum, or not up yet, is an outage like
// any other: the sidecar starts anyway, stays not ready and keeps trying, as
// sidecars already running ride the outage out; exiting would make a crash loop
// under an orchestrator.
func EtcdClient(ctx context.Context, cfg config.Config, sec config.Secrets, log *zap.Logger) (*clientv3.Client, error) {
	ec, err := EtcdConfig(cfg, sec, log)
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
		if RefusesCredentials(err) {
			_ = cli.Close()
			return nil, fmt.Errorf("etcd at %v refuses the credentials (etcd.username, etcd.password_file or HMSSYNC_ETCD_PASSWORD): %w", cfg.Etcd.Endpoints, err)
		}
		log.Warn("etcd does not answer yet: starting not ready; the sidecar keeps trying (check etcd.endpoints and the etcd cluster's quorum)",
			zap.Strings("endpoints", cfg.Etcd.Endpoints), zap.Duration("dial_timeout", cfg.Etcd.DialTimeout), zap.Error(err))
	}
	return cli, nil
}

// RefusesCredentials reports whether err is etcd's answer that the user,
// its password or its permissions are wrong: a configuration error, which
// waiting does not fix.
func RefusesCredentials(err error) bool {
	return errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(err, rpctypes.ErrPermissionDenied) ||
		errors.Is(err, rpctypes.ErrUserNotFound) || errors.Is(err, rpctypes.ErrUserEmpty) ||
		errors.Is(err, rpctypes.ErrGRPCAuthFailed) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) ||
		errors.Is(err, rpctypes.ErrGRPCUserNotFound) || errors.Is(err, rpctypes.ErrGRPCUserEmpty)
}
