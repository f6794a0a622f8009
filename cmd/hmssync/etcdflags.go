package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	clientv3 "go.etcd.io/etcd/client/v3"

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

// etcdFlags are the etcd connection flags every command that talks to etcd
// takes; each has the environment variable of the matching configuration key.
func etcdFlags() []cli.Flag {
	const cat = "etcd"
	return []cli.Flag{
		&cli.StringFlag{Name: "etcd-endpoints", Category: cat, Value: defaultEtcdEndpoint, EnvVars: []string{"HMSSYNC_ETCD_ENDPOINTS"},
			Usage: "comma-separated etcd client URLs (a bare host:port is http://, or https:// with --etcd-ca-file or --etcd-cert-file)"},
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
	Client  sidecar.EtcdClientConfig
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
// The caller closes the client.
func openStore(c *cli.Context) (*cursorstore.Store, *clientv3.Client, error) {
	target, err := etcdTargetFromFlags(c)
	if err != nil {
		return nil, nil, err
	}
	root, _ := cursorstore.ClusterPrefix(target.Prefix, target.Cluster)
	target.Client.ProbePrefix = root + "/"
	cli, err := sidecar.DialEtcd(c.Context, target.Client)
	if err != nil {
		return nil, nil, err
	}
	return cursorstore.New(cli, target.Prefix, target.Cluster, target.Client.RequestTimeout, nil), cli, nil
}
