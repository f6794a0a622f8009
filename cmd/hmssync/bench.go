package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/internal/bench"
	"github.com/hmssync/hmssync/internal/config"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure drain rate, lag, latency, FE statements, etcd writes, memory and CPU against the raw metastore fetch rate",
		Description: `Runs everything on this machine: an embedded etcd, a fake metastore, fake FEs
answering each statement after --fe-latency, and one master and two followers,
each a sidecar process of its own (so that CPU and peak RSS are per sidecar),
for the doris and the native dialect. Each run drains a backlog of --events
events of the project mix, then appends events at --rate per second for
--duration. Every figure is the median over --runs runs. The raw fetch rate (a
bare fetch loop with the same client and batch size over the same log) is
measured in each run too. Progress goes to stderr, the table (or --json) to
stdout.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "events", Value: 200000, Usage: "backlog size of the drain phase"},
			&cli.DurationFlag{Name: "duration", Value: 20 * time.Second, Usage: "length of the steady phase of each run"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "runs per dialect; figures are medians over them"},
			&cli.Float64Flag{Name: "rate", Value: 500, Usage: "events per second appended in the steady phase"},
			&cli.DurationFlag{Name: "fe-latency", Value: 2 * time.Millisecond, Usage: "time each fake FE takes per statement (doris) or batch (native)"},
			&cli.IntFlag{Name: "batch-size", Value: 1000, Usage: "catalogs[].batch_size of the sidecars and of the raw fetch loop"},
			&cli.DurationFlag{Name: "poll-interval", Value: time.Second, Usage: "catalogs[].poll_interval of the sidecars"},
			&cli.DurationFlag{Name: "busy-poll-interval", Value: 25 * time.Millisecond, Usage: "catalogs[].busy_poll_interval of the sidecars (equal to --poll-interval: a fixed interval)"},
			&cli.DurationFlag{Name: "idle", Value: 10 * time.Second, Usage: "length of the idle phase after the steady one, counting the metastore calls (0: none)"},
			&cli.StringFlag{Name: "dialects", Value: "doris,native", Usage: "comma-separated dialects to measure"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of the table"},
			&cli.StringFlag{Name: "json-file", Usage: "also write the JSON object to this file"},
			&cli.StringFlag{Name: "profile-dir", Usage: "write each sidecar's CPU and allocation profiles (pprof) into this directory"},
			&cli.BoolFlag{Name: "transactional", Usage: "the backlog has transactional steps (5%: OPEN_TXN, ALLOC_WRITE_ID_EVENT, COMMIT_TXN, ABORT_TXN, COMMIT_COMPACTION_EVENT); BENCHMARKS.md's figures are without"},
		},
		Subcommands:     []*cli.Command{benchMetastoreCommand(), benchSoakCommand(), benchSidecarCommand()},
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			o := bench.Options{
				Events: c.Int("events"), Steady: c.Duration("duration"), Runs: c.Int("runs"), Rate: c.Float64("rate"),
				FELatency: c.Duration("fe-latency"), BatchSize: c.Int("batch-size"), Poll: c.Duration("poll-interval"),
				BusyPoll: c.Duration("busy-poll-interval"), Idle: c.Duration("idle"),
				Dialects: config.SplitList(c.String("dialects")), ProfileDir: c.String("profile-dir"), Transactional: c.Bool("transactional"),
				Command:     "hmssync " + strings.Join(os.Args[1:], " "),
				SidecarArgs: []string{"bench", "sidecar"},
			}
			if err := o.Check(); err != nil {
				return err
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			rep, err := bench.Run(ctx, o, c.App.ErrWriter)
			if err != nil {
				return err
			}
			return writeReport(c, rep)
		},
	}
}

// benchSidecarCommand is one sidecar process of the bench (bench.RunSidecar),
// started by `hmssync bench` from its own executable; hidden, as nobody else
// has a use for it.
func benchSidecarCommand() *cli.Command {
	return &cli.Command{
		Name:   "sidecar",
		Usage:  "run one sidecar of the bench (started by `hmssync bench` itself)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Required: true, Usage: "the sidecar's YAML configuration, written by the bench"},
			&cli.StringFlag{Name: "profile", Usage: "write CPU and allocation profiles to `PREFIX`.cpu.pprof and PREFIX.allocs.pprof"},
		},
		Action: func(c *cli.Context) error {
			if code := bench.RunSidecar(c.String("config"), c.String("profile"), buildVersion()); code != 0 {
				return cli.Exit(fmt.Sprintf("bench sidecar %s: exit %d", c.String("config"), code), code)
			}
			return nil
		},
	}
}

// benchMetastoreCommand measures a metastore's existing backlog
// (bench.RunMetastore); scripts/realhms/bench.sh runs it against a real Hive
// Metastore.
func benchMetastoreCommand() *cli.Command {
	return &cli.Command{
		Name:  "metastore",
		Usage: "measure raw fetch, fetch+decode and sidecar drains over a backlog already in a metastore",
		Description: `Measures the events (--from, --to] of the metastore at --hms, --rounds times,
interleaved: the raw fetch (a bare get_next_notification loop, --batch-size
events a call), the fetch with every event decoded (sequentially, and with the
next fetch in flight while a batch decodes), and, for each --sidecar binary and
each of --dialects, one sidecar ("BINARY run --config FILE") draining the backlog
into a fake FE, with an embedded etcd in which its cursors start at --from. Its
drain runs from its first commit to the commit reaching --to. Prints min, median
and max per figure, the ratio of each to the same round's raw fetch, and each
sidecar's CPU, peak RSS and step times (from its /metrics). Nothing is written
to the metastore. Progress goes to stderr, the table (or --json) to stdout.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "hms", Required: true, Usage: "the metastore's thrift://host:port"},
			&cli.Int64Flag{Name: "from", Required: true, Usage: "the backlog starts after this event id"},
			&cli.Int64Flag{Name: "to", Required: true, Usage: "the backlog's last event id"},
			&cli.IntFlag{Name: "batch-size", Value: 1000, Usage: "events per fetch (and the sidecars' catalogs[].batch_size)"},
			&cli.IntFlag{Name: "rounds", Value: 3, Usage: "rounds; each measures every figure once"},
			&cli.StringFlag{Name: "dialects", Value: "doris,native", Usage: "comma-separated dialects of the sidecar drains (empty: no drain)"},
			&cli.StringSliceFlag{Name: "sidecar", Usage: "`LABEL=PATH` of an hmssync binary whose run is measured; repeat for before/after (default: this binary, labelled this)"},
			&cli.StringFlag{Name: "include", Usage: "comma-separated catalogs[].include patterns (db.table regular expressions) of the sidecars"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of the table"},
			&cli.StringFlag{Name: "json-file", Usage: "also write the JSON object to this file"},
		},
		Action: func(c *cli.Context) error {
			o := bench.MetastoreOptions{
				HMS: c.String("hms"), From: c.Int64("from"), To: c.Int64("to"), BatchSize: c.Int("batch-size"),
				Rounds: c.Int("rounds"), Dialects: config.SplitList(c.String("dialects")), Include: config.SplitList(c.String("include")),
				Command: "hmssync " + strings.Join(os.Args[1:], " "),
			}
			for _, s := range c.StringSlice("sidecar") {
				b, err := bench.ParseSidecarBinary(s)
				if err != nil {
					return err
				}
				o.Sidecars = append(o.Sidecars, b)
			}
			if len(o.Sidecars) == 0 {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("bench metastore: find this binary to run its sidecar: %w", err)
				}
				o.Sidecars = []bench.SidecarBinary{{Label: "this", Path: exe}}
			}
			if err := o.Check(); err != nil {
				return err
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			rep, err := bench.RunMetastore(ctx, o, c.App.ErrWriter)
			if err != nil {
				return err
			}
			return writeReport(c, rep)
		},
	}
}

// report is what both benches print: a table, or JSON (--json), and JSON to a
// file as well (--json-file).
type report interface {
	WriteJSONFile(path string) error
	WriteJSON(w io.Writer) error
	WriteTable(w io.Writer)
}

func writeReport(c *cli.Context, rep report) error {
	if p := c.String("json-file"); p != "" {
		if err := rep.WriteJSONFile(p); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return rep.WriteJSON(c.App.Writer)
	}
	rep.WriteTable(c.App.Writer)
	return nil
}
