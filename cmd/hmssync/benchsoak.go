package main

import (
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/internal/bench"
)

// benchSoakCommand is `hmssync bench soak` (bench.RunSoak): a long run with
// faults, reporting whether anything grows and whether anything was lost.
func benchSoakCommand() *cli.Command {
	return &cli.Command{
		Name:  "soak",
		Usage: "run three sidecars for --duration under load and faults; report the slopes of RSS, heap in use, goroutines, file descriptors, etcd size and lag, and the final check",
		Description: `Runs everything on this machine: an embedded etcd (one member), a fake
metastore whose workload appends --rate events per second of the project mix,
three fake native FEs and three sidecar processes. Along the way the master is
killed (SIGKILL) and restarted every --failover-every, the etcd member is
restarted in place every --etcd-restart-every, the metastore goes down and
listens again with its state every --metastore-restart-every (each down for
--downtime); no fault starts in the last --quiet. Every --sample-interval it
records each sidecar's RSS, heap in use (go_memstats_heap_inuse_bytes), goroutines (its go_goroutines), open file
descriptors (/proc/PID/fd) and lag, etcd's database size and the master's lag
behind the metastore. The soak compacts etcd every minute (every tenth of a
shorter run) and cleans the metastore's log below the lowest member cursor, as
a deployment's etcd auto-compaction and the metastore's event TTL do. At --duration the workload
stops and every FE must hold the metastore's state (cursors, applied event ids,
databases, tables and partitions) within two minutes. Reported: each figure's
least-squares slope per hour after --warmup (one intercept per sidecar
process), its standard error, and the final check. Exits non-zero when the
final check fails or a slope exceeds its --max-slope. Progress goes to stderr,
the table (or --json) to stdout.`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Minute, Usage: "how long the workload runs"},
			&cli.Float64Flag{Name: "rate", Value: 500, Usage: "events per second the workload appends"},
			&cli.DurationFlag{Name: "failover-every", Value: 4 * time.Minute, Usage: "interval of master kills (0: none)"},
			&cli.DurationFlag{Name: "etcd-restart-every", Value: 20 * time.Minute, Usage: "interval of etcd restarts, the first at half of it (0: none)"},
			&cli.DurationFlag{Name: "metastore-restart-every", Value: 20 * time.Minute, Usage: "interval of metastore restarts, the first at three quarters of it (0: none)"},
			&cli.DurationFlag{Name: "downtime", Value: 5 * time.Second, Usage: "how long etcd and the metastore stay down when restarted"},
			&cli.DurationFlag{Name: "quiet", Value: time.Minute, Usage: "the end of the run in which no fault starts"},
			&cli.DurationFlag{Name: "sample-interval", Value: 5 * time.Second, Usage: "interval of the samples"},
			&cli.DurationFlag{Name: "warmup", Value: 2 * time.Minute, Usage: "left out of the slopes, at the start and after each sidecar restart"},
			&cli.DurationFlag{Name: "lease-ttl", Value: 10 * time.Second, Usage: "the sidecars' etcd.lease_ttl (below 12s the request timeout becomes a quarter of it)"},
			&cli.DurationFlag{Name: "fe-latency", Value: 2 * time.Millisecond, Usage: "time each fake FE takes per batch"},
			&cli.BoolFlag{Name: "transactional", Value: true, Usage: "5% of the workload's steps are transactional (OPEN_TXN, ALLOC_WRITE_ID_EVENT, COMMIT_TXN, ABORT_TXN, COMMIT_COMPACTION_EVENT), transactions open across the faults; --transactional=false: the bench mix alone"},
			&cli.IntFlag{Name: "batch-size", Value: 1000, Usage: "catalogs[].batch_size of the sidecars"},
			&cli.DurationFlag{Name: "poll-interval", Value: time.Second, Usage: "catalogs[].poll_interval of the sidecars"},
			&cli.DurationFlag{Name: "busy-poll-interval", Value: 25 * time.Millisecond, Usage: "catalogs[].busy_poll_interval of the sidecars"},
			&cli.StringSliceFlag{Name: "max-slope", Usage: "`NAME=VALUE`: fail when the slope NAME (rss_mib, heap_inuse_mib, goroutines, open_fds, etcd_db_mib, etcd_db_in_use_mib, lag_events) grows faster than VALUE per hour; repeatable"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of the table"},
			&cli.StringFlag{Name: "json-file", Usage: "also write the JSON object to this file"},
		},
		Action: func(c *cli.Context) error {
			o := bench.SoakOptions{
				Duration: c.Duration("duration"), Rate: c.Float64("rate"),
				FailoverEvery: c.Duration("failover-every"), EtcdRestartEvery: c.Duration("etcd-restart-every"), MetastoreRestartEvery: c.Duration("metastore-restart-every"),
				Downtime: c.Duration("downtime"), Quiet: c.Duration("quiet"), SampleEvery: c.Duration("sample-interval"), Warmup: c.Duration("warmup"),
				LeaseTTL: c.Duration("lease-ttl"), FELatency: c.Duration("fe-latency"), Transactional: c.Bool("transactional"), BatchSize: c.Int("batch-size"),
				Poll: c.Duration("poll-interval"), BusyPoll: c.Duration("busy-poll-interval"), MaxSlopes: map[string]float64{},
				Command:     "hmssync " + strings.Join(os.Args[1:], " "),
				SidecarArgs: []string{"bench", "sidecar"},
			}
			for _, s := range c.StringSlice("max-slope") {
				name, v, err := bench.ParseMaxSlope(s)
				if err != nil {
					return err
				}
				o.MaxSlopes[name] = v
			}
			if err := o.Check(); err != nil {
				return err
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			rep, err := bench.RunSoak(ctx, o, c.App.ErrWriter)
			if err != nil {
				return err
			}
			if err := writeReport(c, rep); err != nil {
				return err
			}
			return rep.Verdict(o.MaxSlopes)
		},
	}
}
