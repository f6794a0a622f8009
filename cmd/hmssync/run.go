package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
)

// runFlags are the flags of SPEC §6 and the configuration keys they set.
var runFlags = []struct {
	name, key, usage string
}{
	{"cluster", "cluster", "cluster name: the etcd subtree shared by all sidecars of one FE cluster (cluster)"},
	{"member", "member", "this sidecar's member name (member; default $POD_NAME, else the hostname)"},
	{"etcd-endpoints", "etcd.endpoints", "comma-separated etcd URLs (etcd.endpoints)"},
	{"embedded-etcd", "etcd.embedded_dir", "run a single-node etcd in-process with its data in DIR (etcd.embedded_dir)"},
	{"fe-url", "fe.url", "the FE's HTTP URL (fe.url)"},
	{"fe-dialect", "fe.dialect", "doris, native or log (fe.dialect)"},
	{"http-listen", "http.listen", "address of the status, health and metrics endpoints (http.listen)"},
	{"log-level", "log.level", "debug, info, warn or error (log.level)"},
	{"log-format", "log.format", "json or console (log.format; default console on a terminal, else json)"},
}

func runCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "YAML configuration file (see examples/sidecar.yaml)", EnvVars: []string{"HMSSYNC_CONFIG"}},
		&cli.StringFlag{Name: "hms-uris", Usage: "comma-separated thrift:// URIs of the first catalog's metastore (catalogs[0].hms_uris)"},
		&cli.BoolFlag{Name: "check-config", Usage: "validate the configuration, print it (without secrets) and exit"},
	}
	for _, f := range runFlags {
		flags = append(flags, &cli.StringFlag{Name: f.name, Usage: f.usage})
	}
	return &cli.Command{
		Name:  "run",
		Usage: "run the sidecar beside one FE",
		Description: `Runs the sync driver: elects a master through etcd, tails the metastore's
notification log and applies the changes to the FE. Configuration precedence:
flags > HMSSYNC_… environment > --config file > defaults. Secrets come from files
(fe.password_file, etcd.password_file) or HMSSYNC_FE_PASSWORD / HMSSYNC_ETCD_PASSWORD.`,
		Flags: flags,
		Action: func(c *cli.Context) error {
			src := config.Sources{File: c.String("config"), Getenv: os.Getenv, Flags: map[string]string{}}
			for _, f := range runFlags {
				if c.IsSet(f.name) {
					src.Flags[f.key] = c.String(f.name)
				}
			}
			if c.IsSet("hms-uris") {
				src.HMSURIs = config.SplitList(c.String("hms-uris"))
			}
			cfg, sec, err := sidecar.LoadConfig(src)
			if err != nil {
				return err
			}
			if c.Bool("check-config") {
				for _, w := range sec.Warnings {
					fmt.Fprintln(c.App.ErrWriter, "warning:", w)
				}
				out, err := yaml.Marshal(cfg)
				if err != nil {
					return err
				}
				_, err = c.App.Writer.Write(out)
				return err
			}
			log, level, err := sidecar.NewLogger(cfg.Log.Level, cfg.Log.Format)
			if err != nil {
				return err
			}
			defer func() { _ = log.Sync() }()
			for _, w := range sec.Warnings {
				log.Warn(w)
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			return sidecar.Run(ctx, cfg, sec, log, level, buildVersion())
		},
	}
}

// signalContext ends at SIGTERM or SIGINT.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
}
