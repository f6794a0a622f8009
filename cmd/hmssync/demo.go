package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/internal/demo"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run etcd, a fake metastore with a workload, three fake FEs and three sidecars in one process",
		Description: `Starts everything embedded: a single-node etcd, a fake Hive Metastore with a
running workload, three fake FEs and three sidecars built exactly as 'run' builds
them. Shows each member's role, cursor and lag and what each FE applied, kills the
master midway to show the failover (and restarts it, to show the resume from its
durable cursor), and exits 0 once every FE holds the metastore's state.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dialect", Value: "native", Usage: "native (every sidecar applies to its own FE) or doris (a Doris-like FE cluster; only the master applies)"},
			&cli.DurationFlag{Name: "workload", Value: 6 * time.Second, Usage: "how long the metastore workload runs"},
			&cli.Float64Flag{Name: "rate", Value: 100, Usage: "metastore changes per second during the workload"},
			&cli.BoolFlag{Name: "no-failover", Usage: "do not kill the master midway"},
			&cli.DurationFlag{Name: "timeout", Value: 45 * time.Second, Usage: "give up (exit non-zero) if the FEs have not converged by then"},
			&cli.BoolFlag{Name: "plain", Usage: "print progress lines even on a terminal"},
		},
		Action: func(c *cli.Context) error {
			d := c.String("dialect")
			if d != "native" && d != "doris" {
				return fmt.Errorf("--dialect %q: want native or doris", d)
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			live := !c.Bool("plain") && stdoutIsTerminal()
			return demo.Run(ctx, demo.Options{
				Dialect: d, Workload: c.Duration("workload"), Rate: c.Float64("rate"),
				Failover: !c.Bool("no-failover"), Timeout: c.Duration("timeout"), Live: live, Out: c.App.Writer,
				Version: buildVersion(),
			})
		},
	}
}

func stdoutIsTerminal() bool {
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
