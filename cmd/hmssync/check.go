package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/preflight"
	"github.com/hmssync/hmssync/internal/sidecar"
)

// checkCommand is the preflight: it loads the configuration as `run` does and
// checks etcd, each catalog's metastore and the FE (internal/preflight).
func checkCommand() *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "check etcd, the metastores and the FE a configuration names; exit 0 only when every check passes",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "the sidecar's configuration file (as for run); HMSSYNC_… variables apply too"},
			&cli.BoolFlag{Name: "json", Usage: `print {"ok":bool,"checks":[{"check","ok","detail","fix"}]}`},
		},
		Action: func(c *cli.Context) error {
			var rs []preflight.Result
			cfg, sec, err := sidecar.LoadConfig(config.Sources{File: c.String("config")})
			if err == nil {
				var t preflight.Target
				if t, err = preflightTarget(cfg, sec); err == nil {
					rs = preflight.Run(c.Context, t)
				}
			}
			if err != nil {
				rs = []preflight.Result{{Check: "configuration " + c.String("config"), Detail: err.Error(),
					Fix: "correct the keys named above (examples/sidecar.yaml documents each one)"}}
			}
			write := preflight.WriteText
			if c.Bool("json") {
				write = preflight.WriteJSON
			}
			if err := write(c.App.Writer, rs); err != nil {
				return err
			}
			if !preflight.Passed(rs) {
				return cli.Exit("preflight failed: see the ✗ checks above", 1)
			}
			return nil
		},
	}
}

// preflightTarget is what check checks, from a loaded configuration.
func preflightTarget(cfg config.Config, sec config.Secrets) (preflight.Target, error) {
	ec, err := sidecar.EtcdConfig(cfg, sec, zap.NewNop())
	if err != nil {
		return preflight.Target{}, err
	}
	feClient, err := config.FEHTTPClient(cfg.FE) // fe.tls, as run uses it
	if err != nil {
		return preflight.Target{}, err
	}
	t := preflight.Target{
		Member: cfg.Member,
		Etcd: preflight.Etcd{Client: ec, Prefix: cfg.Etcd.Prefix, Cluster: cfg.Cluster,
			RequestTimeout: cfg.Etcd.RequestTimeout, EmbeddedDir: cfg.Etcd.EmbeddedDir},
		FE: preflight.FE{URL: cfg.FE.URL, Dialect: cfg.FE.Dialect, User: cfg.FE.User, Password: sec.FEPassword, Timeout: cfg.FE.Timeout, Client: feClient},
	}
	for i, cc := range cfg.Catalogs {
		tlsCfg, err := cc.HMSTLS.ClientConfig(config.CatalogTLSKey(i))
		if err != nil {
			return preflight.Target{}, fmt.Errorf("catalog %s: %w", cc.Name, err)
		}
		krb, err := sidecar.KerberosConfig(cc.HMSAuth, config.CatalogAuthKey(i))
		if err != nil {
			return preflight.Target{}, fmt.Errorf("catalog %s: %w", cc.Name, err)
		}
		t.Catalogs = append(t.Catalogs, preflight.Catalog{Name: cc.Name, URIs: cc.HMSURIs, Framed: cc.HMSFramed, TLS: tlsCfg, Kerberos: krb,
			UGIUser: cc.HMSUser, HMSCatalog: cc.HMSCatalog, Timeout: cc.HMSTimeout, Window: max(cc.BatchSize, 100)})
	}
	return t, nil
}
