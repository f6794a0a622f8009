package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/names"
	"github.com/hmssync/hmssync/internal/redact"
)

// etcdClientConfig is what newEtcdClient needs. The operator commands fill it
// from etcdFlags; `run` fills it from its configuration (etcd.* in SPEC §6).
type etcdClientConfig struct {
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

const (
	defaultEtcdEndpoint   = "http://127.0.0.1:2379"
	defaultDialTimeout    = 5 * time.Second
	defaultRequestTimeout = 3 * time.Second
)

// newEtcdClient validates cfg, connects and probes. clientv3.New alone does not
// notice an unreachable etcd (it connects lazily), so without the probe a wrong
// endpoint would only show up as timeouts later.
func newEtcdClient(ctx context.Context, cfg etcdClientConfig) (*clientv3.Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd.endpoints is empty: give at least one, e.g. " + defaultEtcdEndpoint)
	}
	anyHTTPS := false
	for _, ep := range cfg.Endpoints {
		scheme, err := endpointScheme(ep)
		if err != nil {
			return nil, err
		}
		anyHTTPS = anyHTTPS || scheme == "https"
	}
	if cfg.DialTimeout <= 0 {
		return nil, fmt.Errorf("etcd dial timeout %s: must be more than 0", cfg.DialTimeout)
	}
	if cfg.RequestTimeout <= 0 {
		return nil, fmt.Errorf("etcd.request_timeout %s: must be more than 0", cfg.RequestTimeout)
	}
	if cfg.Username == "" && cfg.Password != "" {
		return nil, errors.New("an etcd password is set (HMSSYNC_ETCD_PASSWORD or the password file) but no etcd.username")
	}
	if cfg.Username != "" && cfg.Password == "" {
		return nil, fmt.Errorf("etcd.username %q has no password: set HMSSYNC_ETCD_PASSWORD or etcd.password_file", cfg.Username)
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, fmt.Errorf("etcd.tls: cert_file %q and key_file %q go together: give both or neither", cfg.CertFile, cfg.KeyFile)
	}
	var tlsCfg *tls.Config
	if cfg.CAFile != "" || cfg.CertFile != "" {
		info := transport.TLSInfo{TrustedCAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
		c, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd.tls (ca %q, cert %q, key %q): %w", cfg.CAFile, cfg.CertFile, cfg.KeyFile, err)
		}
		tlsCfg = c
	} else if anyHTTPS {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12} // system roots
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		// Dead connections are found by gRPC pings; 10s respects the server's
		// 5s minimum interval.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: cfg.RequestTimeout,
		Username:             cfg.Username,
		Password:             cfg.Password,
		TLS:                  tlsCfg,
		Logger:               lg,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", redact.URLs(cfg.Endpoints), err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if cfg.ProbePrefix != "" {
		_, err = cli.Get(pctx, cfg.ProbePrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	} else {
		_, err = cli.Status(pctx, cfg.Endpoints[0])
	}
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd at %s does not answer within %s: %w (check the endpoints, TLS files and credentials)",
			strings.Join(redact.URLs(cfg.Endpoints), ","), cfg.DialTimeout, err)
	}
	return cli, nil
}

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

// etcdFlags are the etcd connection flags every command that talks to etcd
// takes; each has the environment variable of the matching configuration key.
func etcdFlags() []cli.Flag {
	const cat = "etcd"
	return []cli.Flag{
		&cli.StringFlag{Name: "etcd-endpoints", Category: cat, Value: defaultEtcdEndpoint, EnvVars: []string{"HMSSYNC_ETCD_ENDPOINTS"},
			Usage: "comma-separated etcd client URLs"},
		&cli.StringFlag{Name: "etcd-prefix", Category: cat, Value: cursorstore.DefaultPrefix, EnvVars: []string{"HMSSYNC_ETCD_PREFIX"},
			Usage: "key prefix; the cluster's keys live under `PREFIX`/<cluster>"},
		&cli.StringFlag{Name: "cluster", Category: cat, EnvVars: []string{"HMSSYNC_CLUSTER"},
			Usage: "cluster name (the etcd subtree shared by all sidecars of one FE cluster)"},
		&cli.StringFlag{Name: "etcd-username", Category: cat, EnvVars: []string{"HMSSYNC_ETCD_USERNAME"},
			Usage: "etcd user; the password comes from HMSSYNC_ETCD_PASSWORD or --etcd-password-file"},
		&cli.StringFlag{Name: "etcd-password-file", Category: cat, EnvVars: []string{"HMSSYNC_ETCD_PASSWORD_FILE"},
			Usage: "file holding the etcd password"},
		&cli.StringFlag{Name: "etcd-ca-file", Category: cat, EnvVars: []string{"HMSSYNC_ETCD_TLS_CA_FILE"},
			Usage: "CA bundle to verify etcd's certificate"},
		&cli.StringFlag{Name: "etcd-cert-file", Category: cat, EnvVars: []string{"HMSSYNC_ETCD_TLS_CERT_FILE"},
			Usage: "client certificate for etcd (with --etcd-key-file)"},
		&cli.StringFlag{Name: "etcd-key-file", Category: cat, EnvVars: []string{"HMSSYNC_ETCD_TLS_KEY_FILE"},
			Usage: "client key for etcd"},
		&cli.DurationFlag{Name: "etcd-dial-timeout", Category: cat, Value: defaultDialTimeout, EnvVars: []string{"HMSSYNC_ETCD_DIAL_TIMEOUT"},
			Usage: "how long to wait for etcd at start"},
		&cli.DurationFlag{Name: "etcd-request-timeout", Category: cat, Value: defaultRequestTimeout, EnvVars: []string{"HMSSYNC_ETCD_REQUEST_TIMEOUT"},
			Usage: "deadline of each etcd request"},
	}
}

// etcdTarget is where the operator commands read and write.
type etcdTarget struct {
	Client  etcdClientConfig
	Prefix  string
	Cluster string
}

// etcdTargetFromFlags reads etcdFlags. The password never comes from a flag:
// HMSSYNC_ETCD_PASSWORD, else the password file.
func etcdTargetFromFlags(c *cli.Context) (etcdTarget, error) {
	cluster := c.String("cluster")
	if cluster == "" {
		return etcdTarget{}, errors.New("no cluster given: set --cluster or HMSSYNC_CLUSTER (it names the etcd subtree <prefix>/<cluster>)")
	}
	if err := names.Cluster(cluster); err != nil {
		return etcdTarget{}, fmt.Errorf("--cluster %w", err)
	}
	if err := names.Prefix(c.String("etcd-prefix")); err != nil {
		return etcdTarget{}, fmt.Errorf("--etcd-prefix %w", err)
	}
	if _, err := cursorstore.ClusterPrefix(c.String("etcd-prefix"), cluster); err != nil {
		return etcdTarget{}, err
	}
	// The same rule as run's (readPassword): the file if given, else the
	// environment.
	password, warns, err := config.ReadPassword(c.String("etcd-password-file"), "--etcd-password-file", "HMSSYNC_ETCD_PASSWORD", os.Getenv)
	if err != nil {
		return etcdTarget{}, err
	}
	for _, w := range warns {
		fmt.Fprintln(c.App.ErrWriter, "warning:", w)
	}
	var endpoints []string
	for _, ep := range strings.Split(c.String("etcd-endpoints"), ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			endpoints = append(endpoints, ep)
		}
	}
	return etcdTarget{
		Prefix:  c.String("etcd-prefix"),
		Cluster: cluster,
		Client: etcdClientConfig{
			Endpoints:      endpoints,
			Username:       c.String("etcd-username"),
			Password:       password,
			CAFile:         c.String("etcd-ca-file"),
			CertFile:       c.String("etcd-cert-file"),
			KeyFile:        c.String("etcd-key-file"),
			DialTimeout:    c.Duration("etcd-dial-timeout"),
			RequestTimeout: c.Duration("etcd-request-timeout"),
		},
	}, nil
}

// openStore connects to etcd as the flags say and returns the cluster's store.
// The caller closes the client.
func openStore(c *cli.Context) (*cursorstore.Store, *clientv3.Client, error) {
	target, err := etcdTargetFromFlags(c)
	if err != nil {
		return nil, nil, err
	}
	root, _ := cursorstore.ClusterPrefix(target.Prefix, target.Cluster)
	target.Client.ProbePrefix = root + "/"
	cli, err := newEtcdClient(c.Context, target.Client)
	if err != nil {
		return nil, nil, err
	}
	return cursorstore.New(cli, target.Prefix, target.Cluster, target.Client.RequestTimeout, nil), cli, nil
}
