package sidecar

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/redact"
)

// EtcdClientConfig is how to reach etcd: the one description behind every
// etcd client hmssync opens. `run` fills it from its configuration (EtcdClientOf),
// the operator commands from their --etcd-* flags; both are checked and turned
// into a client by the same rules (ClientConfig).
type EtcdClientConfig struct {
	Endpoints []string // http://host:port, https://host:port or host:port
	Username  string
	Password  string // from a file or the environment, never from a flag
	CAFile    string // TLS: CA bundle to verify the servers
	CertFile  string // TLS: client certificate (with KeyFile)
	KeyFile   string
	// DialTimeout bounds the connection and the start-up probe.
	DialTimeout time.Duration
	// RequestTimeout is not used by the client itself; it is validated here
	// because every caller needs it and it has the same rules everywhere.
	RequestTimeout time.Duration
	// ProbePrefix is read once (count only) at start, proving that etcd answers
	// and that the credentials may read the keys under it. "" probes with a
	// Status call instead.
	ProbePrefix string
	// Logger receives the client's own logs; nil discards them.
	Logger *zap.Logger
}

// EtcdClientOf is the etcd client description of a sidecar's configuration.
func EtcdClientOf(cfg config.Config, sec config.Secrets, log *zap.Logger) EtcdClientConfig {
	c := EtcdClientConfig{
		Endpoints: cfg.Etcd.Endpoints, Username: cfg.Etcd.Username,
		CAFile: cfg.Etcd.TLS.CAFile, CertFile: cfg.Etcd.TLS.CertFile, KeyFile: cfg.Etcd.TLS.KeyFile,
		DialTimeout: cfg.Etcd.DialTimeout, RequestTimeout: cfg.Etcd.RequestTimeout,
		Logger: log.Named("etcd-client").WithOptions(zap.IncreaseLevel(zap.ErrorLevel)),
	}
	// Without a user etcd authenticates nobody: a password in the environment
	// alone is not sent (and, unlike a stray --etcd-password-file, not refused).
	if c.Username != "" {
		c.Password = sec.EtcdPassword
	}
	return c
}

// ClientConfig checks c and returns the etcd client configuration: TLS from
// the files, or the system's roots for an https:// endpoint without them.
func (c EtcdClientConfig) ClientConfig() (clientv3.Config, error) {
	if len(c.Endpoints) == 0 {
		return clientv3.Config{}, errors.New("etcd.endpoints is empty: give at least one, e.g. http://127.0.0.1:2379")
	}
	anyHTTPS := false
	for _, ep := range c.Endpoints {
		scheme, err := endpointScheme(ep)
		if err != nil {
			return clientv3.Config{}, err
		}
		anyHTTPS = anyHTTPS || scheme == "https"
	}
	if c.DialTimeout <= 0 {
		return clientv3.Config{}, fmt.Errorf("etcd dial timeout %s: must be more than 0", c.DialTimeout)
	}
	if c.RequestTimeout <= 0 {
		return clientv3.Config{}, fmt.Errorf("etcd.request_timeout %s: must be more than 0", c.RequestTimeout)
	}
	if c.Username == "" && c.Password != "" {
		return clientv3.Config{}, errors.New("an etcd password is set (HMSSYNC_ETCD_PASSWORD or the password file) but no etcd.username")
	}
	if c.Username != "" && c.Password == "" {
		return clientv3.Config{}, fmt.Errorf("etcd.username %q has no password: set HMSSYNC_ETCD_PASSWORD or etcd.password_file", c.Username)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return clientv3.Config{}, fmt.Errorf("etcd.tls: cert_file %q and key_file %q go together: give both or neither", c.CertFile, c.KeyFile)
	}
	var tlsCfg *tls.Config
	if c.CAFile != "" || c.CertFile != "" {
		info := transport.TLSInfo{TrustedCAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile}
		tc, err := info.ClientConfig()
		if err != nil {
			return clientv3.Config{}, fmt.Errorf("etcd.tls (ca %q, cert %q, key %q): %w", c.CAFile, c.CertFile, c.KeyFile, err)
		}
		tlsCfg = tc
	} else if anyHTTPS {
		// Without a TLS configuration the etcd client would speak plain gRPC
		// to an https:// endpoint.
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12} // system roots
	}
	lg := c.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	return clientv3.Config{
		Endpoints:   c.Endpoints,
		DialTimeout: c.DialTimeout,
		// Dead connections are found by gRPC pings; 10s respects the server's
		// 5s minimum interval.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: c.RequestTimeout,
		Username:             c.Username,
		Password:             c.Password,
		TLS:                  tlsCfg,
		Logger:               lg,
	}, nil
}

// EtcdConfig is the etcd client configuration of a sidecar's configuration,
// for `hmssync check`, which probes etcd its own way.
func EtcdConfig(cfg config.Config, sec config.Secrets, log *zap.Logger) (clientv3.Config, error) {
	return EtcdClientOf(cfg, sec, log).ClientConfig()
}

// open builds the client. clientv3.New connects lazily: it does not notice an
// unreachable etcd by itself, so every caller probes.
func (c EtcdClientConfig) open() (*clientv3.Client, error) {
	ec, err := c.ClientConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(ec)
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", redact.URLs(c.Endpoints), err)
	}
	return cli, nil
}

// DialEtcd opens the client of the operator commands and probes it: an etcd
// that does not answer within the dial timeout is an error, since an operator
// waiting at a prompt wants to hear at once that the endpoint is wrong.
func DialEtcd(ctx context.Context, c EtcdClientConfig) (*clientv3.Client, error) {
	cli, err := c.open()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, c.DialTimeout)
	defer cancel()
	if c.ProbePrefix != "" {
		_, err = cli.Get(pctx, c.ProbePrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	} else {
		_, err = cli.Status(pctx, c.Endpoints[0])
	}
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd at %s does not answer within %s: %w (check the endpoints, TLS files and credentials)",
			strings.Join(redact.URLs(c.Endpoints), ","), c.DialTimeout, err)
	}
	return cli, nil
}

// EtcdClient opens a sidecar's etcd client and checks, with a deadline, that
// etcd answers. Only an answer that proves the configuration wrong (the
// credentials refused) stops the start-up. An etcd without quorum, or not up
// yet, is an outage like any other: the sidecar starts anyway, stays not ready
// and keeps trying, as sidecars already running ride the outage out; exiting
// would make a crash loop under an orchestrator.
func EtcdClient(ctx context.Context, cfg config.Config, sec config.Secrets, log *zap.Logger) (*clientv3.Client, error) {
	cli, err := EtcdClientOf(cfg, sec, log).open()
	if err != nil {
		return nil, err
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

// endpointScheme is the scheme of an etcd endpoint (http for a bare
// host:port), or why it is not one.
func endpointScheme(ep string) (string, error) {
	if redact.HasUserInfo(ep) {
		return "", fmt.Errorf("etcd endpoint %q: want no user information in the URL: use --etcd-username and HMSSYNC_ETCD_PASSWORD or --etcd-password-file", redact.URL(ep))
	}
	if !strings.Contains(ep, "://") {
		if ep == "" || strings.ContainsAny(ep, "/ ") {
			return "", fmt.Errorf("etcd endpoint %q: want http://host:port, https://host:port or host:port", ep)
		}
		return "http", nil
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("etcd endpoint %q: want http://host:port, https://host:port or host:port", ep)
	}
	return u.Scheme, nil
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
