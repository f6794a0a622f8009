package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/names"
	"github.com/hmssync/hmssync/internal/sidecar"
)

const (
	defaultEtcdEndpoint   = "http://127.0.0.1:2379"
	defaultDialTimeout    = 5 * time.Second
	defaultRequestTimeout = 3 * time.Second
)

// etcdFlags are the etcd connection flags every operator command that talks to
// etcd takes (status, cursor, member); each has the environment variable of the
// matching configuration key. --config reads the same values from the sidecar's
// configuration file, with run's loader (operatorConfig).
func etcdFlags() []cli.Flag {
	const cat = "etcd"
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Category: cat, EnvVars: []string{"HMSSYNC_CONFIG"},
			Usage: "the sidecar's configuration `FILE` (as for run): cluster, etcd endpoints, prefix, credentials and TLS come from it; the flags below win over it"},
		&cli.StringFlag{Name: "etcd-endpoints", Category: cat, Value: defaultEtcdEndpoint, EnvVars: []string{"HMSSYNC_ETCD_ENDPOINTS"},
			Usage: "comma-separated etcd client URLs (a bare host:port is http://, or https:// with --etcd-ca-file or --etcd-cert-file)"},
		&cli.StringFlag{Name: "etcd-prefix", Category: cat, Value: cursorstore.DefaultPrefix, EnvVars: []string{"HMSSYNC_ETCD_PREFIX"},
			Usage: "key prefix; the cluster's keys live under `PREFIX`/<cluster>"},
		&cli.StringFlag{Name: "cluster", Category: cat, Value: config.Default().Cluster, EnvVars: []string{"HMSSYNC_CLUSTER"},
			Usage: "cluster name (the etcd subtree shared by all sidecars of one FE cluster), as run defaults it"},
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
	Client  sidecar.EtcdClientConfig
	Prefix  string
	Cluster string
}

// etcdFlagKeys maps the etcd flags to the configuration keys they set when
// --config is given.
var etcdFlagKeys = map[string]string{
	"etcd-endpoints": "etcd.endpoints", "etcd-prefix": "etcd.prefix", "cluster": "cluster",
	"etcd-username": "etcd.username", "etcd-password-file": "etcd.password_file",
	"etcd-ca-file": "etcd.tls.ca_file", "etcd-cert-file": "etcd.tls.cert_file", "etcd-key-file": "etcd.tls.key_file",
	"etcd-dial-timeout": "etcd.dial_timeout", "etcd-request-timeout": "etcd.request_timeout",
}

// operatorConfig loads the sidecar configuration that --config names, with
// run's loader and precedence (flags > HMSSYNC_… environment > file >
// defaults): the etcd flags given on the command line (or through their
// variables) set their keys. ok is false without --config. A command that needs
// more of the sidecar's configuration than etcd (a catalog's metastore) reads it
// from here.
func operatorConfig(c *cli.Context) (cfg config.Config, sec config.Secrets, ok bool, err error) {
	file := c.String("config")
	if file == "" {
		return cfg, sec, false, nil
	}
	src := config.Sources{File: file, Getenv: os.Getenv, Flags: map[string]string{}}
	for flag, key := range etcdFlagKeys {
		if c.IsSet(flag) {
			v := c.String(flag)
			if d, isDur := c.Value(flag).(time.Duration); isDur {
				v = d.String()
			}
			src.Flags[key] = v
		}
	}
	cfg, sec, err = sidecar.LoadConfig(src)
	if err != nil {
		return cfg, sec, true, fmt.Errorf("--config %s: %w", file, err)
	}
	for _, w := range sec.Warnings {
		fmt.Fprintln(c.App.ErrWriter, "warning:", w)
	}
	if cfg.Etcd.EmbeddedDir != "" && !c.IsSet("etcd-endpoints") {
		// The sidecar serves its embedded etcd there (sidecar.Run).
		cfg.Etcd.Endpoints = []string{"http://" + cfg.Etcd.EmbeddedListen}
	}
	return cfg, sec, true, nil
}

// etcdTargetFromFlags reads etcdFlags, or the file --config names
// (operatorConfig). The password never comes from a flag:
// HMSSYNC_ETCD_PASSWORD, else the password file.
func etcdTargetFromFlags(c *cli.Context) (etcdTarget, error) {
	cfg, sec, ok, err := operatorConfig(c)
	if err != nil {
		return etcdTarget{}, err
	}
	if ok {
		client := sidecar.EtcdClientOf(cfg, sec, zap.NewNop())
		return etcdTarget{Prefix: cfg.Etcd.Prefix, Cluster: cfg.Cluster, Client: client}, nil
	}
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
	tls := c.String("etcd-ca-file") != "" || c.String("etcd-cert-file") != ""
	for _, ep := range strings.Split(c.String("etcd-endpoints"), ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			endpoints = append(endpoints, config.EtcdEndpointURL(ep, tls))
		}
	}
	return etcdTarget{
		Prefix:  c.String("etcd-prefix"),
		Cluster: cluster,
		Client: sidecar.EtcdClientConfig{
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
// The caller closes the client. A cluster with no key at all is refused
// (cursorstore.ErrNoCluster lists the clusters under the prefix), so that a
// typo in --cluster reads as one rather than as an empty cluster, unless the
// command's --allow-new accepts a cluster whose sidecars have not run yet.
func openStore(c *cli.Context) (*cursorstore.Store, *clientv3.Client, error) {
	store, cli, err := dialStore(c)
	if err != nil {
		return nil, nil, err
	}
	if c.Bool("allow-new") {
		return store, cli, nil
	}
	if err := store.CheckExists(c.Context); err != nil {
		cli.Close()
		return nil, nil, err
	}
	return store, cli, nil
}

// dialStore is openStore without the check that the cluster exists.
func dialStore(c *cli.Context) (*cursorstore.Store, *clientv3.Client, error) {
	target, err := etcdTargetFromFlags(c)
	if err != nil {
		return nil, nil, err
	}
	root, err := cursorstore.ClusterPrefix(target.Prefix, target.Cluster)
	if err != nil {
		return nil, nil, err
	}
	target.Client.ProbePrefix = root + "/"
	cli, err := sidecar.DialEtcd(c.Context, target.Client)
	if err != nil {
		return nil, nil, err
	}
	return cursorstore.New(cli, target.Prefix, target.Cluster, target.Client.RequestTimeout, nil), cli, nil
}
