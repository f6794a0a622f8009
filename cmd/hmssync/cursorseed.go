package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/eventlines"
	"github.com/hmssync/hmssync/internal/sidecar"
)

// cursorSeedCommand writes a catalog's first committed cursor before its
// sidecars first run, so that they start without a full refresh
// (docs/migrate-from-doris.md).
func cursorSeedCommand() *cli.Command {
	return &cli.Command{
		Name:  "seed",
		Usage: "start a catalog at an event of the metastore's log, before its sidecars first run: they start without a full refresh",
		Description: "Chooses the cursor from --from-time (the first event at or after the time, found by bisecting the log and\n" +
			"scanning a --margin before it, as event times are only nearly in id order), --from-id (that event is the\n" +
			"first applied) or --current (only events after now are applied), prints what it chose, and writes the\n" +
			"committed cursor, its epoch, the metastore's db uuid and catalogs/<c>/seed to etcd. Refused once a sidecar\n" +
			"has run the catalog (a committed cursor, a member's durable cursor or a member's status exists) unless\n" +
			"--force. The metastore and etcd are those of --config, the file `run` uses.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Required: true, Usage: "the sidecar's configuration `FILE` (as for run): the catalog's metastore and auth, etcd and the cluster"},
			&cli.StringFlag{Name: "catalog", Required: true, Usage: "the catalog to seed (catalogs[].name in --config)"},
			&cli.TimestampFlag{Name: "from-time", Layout: time.RFC3339, Usage: "apply the events from this `RFC3339` time on (e.g. when Doris's own sync was turned off, a little earlier)"},
			&cli.Int64Flag{Name: "from-id", Usage: "apply the events from this event `ID` on"},
			&cli.BoolFlag{Name: "current", Usage: "apply only the events after the metastore's current event id"},
			&cli.DurationFlag{Name: "margin", Value: 2 * time.Minute, Usage: "with --from-time, how far before the time to scan for events written out of time order"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "deadline of the whole command (each metastore call also has the catalog's hms_timeout)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would be seeded; write nothing"},
			&cli.BoolFlag{Name: "force", Usage: "seed although a sidecar has run the catalog (stop every sidecar first)"},
		},
		Action: cursorSeed,
	}
}

func cursorSeed(c *cli.Context) error {
	if c.Args().Present() {
		return fmt.Errorf("cursor seed takes no arguments, got %q (did you mean --from-id %s?)", c.Args().Slice(), c.Args().First())
	}
	modes := 0
	for _, f := range []string{"from-time", "from-id", "current"} {
		if c.IsSet(f) {
			modes++
		}
	}
	if modes != 1 {
		return errors.New("cursor seed: give exactly one of --from-time RFC3339, --from-id N, --current")
	}
	if c.Duration("margin") < 0 || c.Duration("timeout") <= 0 {
		return errors.New("cursor seed: --margin must be 0 or more and --timeout more than 0")
	}
	cfg, sec, err := sidecar.LoadConfig(config.Sources{File: c.String("config")})
	if err != nil {
		return err
	}
	name := c.String("catalog")
	idx := slices.IndexFunc(cfg.Catalogs, func(cc config.Catalog) bool { return cc.Name == name })
	if idx < 0 {
		var names []string
		for _, cc := range cfg.Catalogs {
			names = append(names, cc.Name)
		}
		return fmt.Errorf("--catalog %s: %s has no such catalog (catalogs: %s)", name, c.String("config"), strings.Join(names, ", "))
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	client, err := seedMetastoreClient(cfg, idx)
	if err != nil {
		return err
	}
	defer client.Close()

	var ch seedChoice
	switch {
	case c.IsSet("current"):
		ch, err = seedCurrent(ctx, client)
	case c.IsSet("from-id"):
		ch, err = seedFromID(ctx, client, c.Int64("from-id"))
	default:
		ch, err = seedFromTime(ctx, client, *c.Timestamp("from-time"), c.Duration("margin"), seedMaxScan)
	}
	if err != nil {
		return fmt.Errorf("catalog %s (metastore %s): %w", name, strings.Join(cfg.Catalogs[idx].HMSURIs, ","), err)
	}
	uuid, _, err := client.MetastoreUUID(ctx)
	if err != nil {
		return fmt.Errorf("catalog %s: read the metastore's db uuid: %w", name, err)
	}
	ch.print(c.App.Writer, name)
	if c.Bool("dry-run") {
		_, err = fmt.Fprintln(c.App.Writer, "not written (--dry-run)")
		return err
	}
	return writeSeed(ctx, c, cfg, sec, name, ch, uuid)
}

// seedMetastoreClient is the metastore client of catalog idx, built as `run`
// builds it.
func seedMetastoreClient(cfg config.Config, idx int) (*hms.Client, error) {
	cc := cfg.Catalogs[idx]
	tlsCfg, err := cc.HMSTLS.ClientConfig(config.CatalogTLSKey(idx))
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", cc.Name, err)
	}
	krb, err := sidecar.KerberosConfig(cc.HMSAuth, config.CatalogAuthKey(idx))
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", cc.Name, err)
	}
	return hms.NewClient(hms.ClientConfig{URIs: cc.HMSURIs, DialTimeout: min(cc.HMSTimeout, 10*time.Second), CallTimeout: cc.HMSTimeout,
		Framed: cc.HMSFramed, TLS: tlsCfg, Kerberos: krb, UGIUser: cc.HMSUser})
}

// writeSeed writes the choice to the etcd of cfg.
func writeSeed(ctx context.Context, c *cli.Context, cfg config.Config, sec config.Secrets, catalog string, ch seedChoice, uuid string) error {
	if cfg.Etcd.EmbeddedDir != "" {
		// The sidecar serves its embedded etcd there (sidecar.Run), as the
		// other operator commands reach it (operatorConfig).
		cfg.Etcd.Endpoints = []string{"http://" + cfg.Etcd.EmbeddedListen}
	}
	ec := sidecar.EtcdClientOf(cfg, sec, zap.NewNop())
	root, err := cursorstore.ClusterPrefix(cfg.Etcd.Prefix, cfg.Cluster)
	if err != nil {
		return err
	}
	ec.ProbePrefix = root + "/"
	cli, err := sidecar.DialEtcd(ctx, ec)
	if err != nil {
		return err
	}
	defer cli.Close()
	store := cursorstore.New(cli, cfg.Etcd.Prefix, cfg.Cluster, cfg.Etcd.RequestTimeout, nil)
	req := cursorstore.SeedRequest{Value: ch.cursor, From: ch.from, Metastore: uuid, Force: c.Bool("force")}
	if ch.first != nil {
		req.EventTime = int64(ch.first.Time)
	}
	old, sd, err := store.SeedMaster(ctx, catalog, req)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "seeded %s: %s -> %d (epoch %d)\n", store.MasterCursorKey(catalog), old, sd.Value, sd.Epoch)
	return err
}

// seedMaxScan bounds the events --from-time scans after its bisection.
const seedMaxScan = 100_000

// seedLog is what choosing a seed reads of the metastore (*hms.Client).
type seedLog interface {
	CurrentEventID(ctx context.Context) (int64, error)
	NextEvents(ctx context.Context, after int64, max int, skipTypes []string) (hms.Fetch, error)
}

// seedChoice is the cursor chosen and why.
type seedChoice struct {
	cursor int64
	// first is the first event applied after the cursor (nil: none yet).
	first *message.Event
	// from says how it was chosen (kept in the seed key).
	from string
	// notes say what was scanned and anything an operator should know.
	notes []string
}

func (ch seedChoice) print(w io.Writer, catalog string) {
	fmt.Fprintf(w, "catalog %s: cursor %d (%s)\n", catalog, ch.cursor, ch.from)
	if e := ch.first; e != nil {
		fmt.Fprintf(w, "  first event applied: id %d at %s, %s %s\n", e.ID,
			time.Unix(int64(e.Time), 0).UTC().Format(time.RFC3339), eventlines.Printable(e.Type), eventlines.Printable(objectOf(*e)))
	} else {
		fmt.Fprintln(w, "  first event applied: the next one the metastore writes")
	}
	for _, n := range ch.notes {
		fmt.Fprintln(w, "  "+n)
	}
}

func objectOf(e message.Event) string {
	switch {
	case e.DB == "":
		return "(no database)"
	case e.Table == "":
		return e.DB
	}
	return e.DB + "." + e.Table
}

// probe returns the first event with an id at or above id (nil: none), and
// whether the log is contiguous up to it (no event at or after id was
// cleaned).
func probe(ctx context.Context, log seedLog, id int64) (*message.Event, hms.Continuity, error) {
	f, err := log.NextEvents(ctx, id-1, 1, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("get_next_notification after %d: %w", id-1, err)
	}
	if len(f.Events) == 0 {
		return nil, f.Continuity, nil
	}
	return &f.Events[0], f.Continuity, nil
}

func seedCurrent(ctx context.Context, log seedLog) (seedChoice, error) {
	cur, err := log.CurrentEventID(ctx)
	if err != nil {
		return seedChoice{}, fmt.Errorf("get_current_notificationEventId: %w", err)
	}
	return seedChoice{cursor: cur, from: "current"}, nil
}

func seedFromID(ctx context.Context, log seedLog, id int64) (seedChoice, error) {
	if id < 1 {
		return seedChoice{}, fmt.Errorf("--from-id %d: want an event id, 1 or more", id)
	}
	cur, err := log.CurrentEventID(ctx)
	if err != nil {
		return seedChoice{}, fmt.Errorf("get_current_notificationEventId: %w", err)
	}
	if id > cur+1 {
		return seedChoice{}, fmt.Errorf("--from-id %d: beyond the metastore's current event id %d (the next event is %d at most)", id, cur, cur+1)
	}
	e, cont, err := probe(ctx, log, id)
	if err != nil {
		return seedChoice{}, err
	}
	if cont == hms.Gap {
		return seedChoice{}, fmt.Errorf("--from-id %d: that event was cleaned from the metastore's log already (hive.metastore.event.db.listener.timetolive): "+
			"a seed there would miss events; seed a later id, or start the sidecars without a seed (a full refresh)", id)
	}
	return seedChoice{cursor: id - 1, first: e, from: fmt.Sprintf("id %d", id)}, nil
}

// seedFromTime chooses the cursor before the first event (in id order) whose
// time is at or after t: a bisection of the log finds the first event at or
// after t−margin (ids are monotonic, times only nearly: two transactions may
// commit their events out of time order), then the events from there are
// scanned for the first at or after t. Event times are whole seconds, so t is
// rounded down. At most maxScan events are scanned; beyond that the seed
// starts at the margin's first event (replaying an event is harmless).
func seedFromTime(ctx context.Context, log seedLog, t time.Time, margin time.Duration, maxScan int) (seedChoice, error) {
	at := t.UTC().Format(time.RFC3339)
	ch := seedChoice{from: "time " + at}
	cur, err := log.CurrentEventID(ctx)
	if err != nil {
		return ch, fmt.Errorf("get_current_notificationEventId: %w", err)
	}
	oldest, _, err := probe(ctx, log, 1)
	if err != nil {
		return ch, err
	}
	if oldest == nil {
		ch.cursor = cur
		ch.notes = append(ch.notes, fmt.Sprintf("the metastore's log holds no event (current id %d): the cursor is the current id", cur))
		return ch, nil
	}
	target, low := t.Unix(), t.Add(-margin).Unix()
	if oldest.ID > 1 && int64(oldest.Time) >= target {
		return ch, fmt.Errorf("the oldest event the metastore keeps (id %d at %s) is not older than %s: events of that time may have been cleaned "+
			"(hive.metastore.event.db.listener.timetolive), and a seed there would miss them; seed a later time, or start the sidecars without a seed (a full refresh)",
			oldest.ID, time.Unix(int64(oldest.Time), 0).UTC().Format(time.RFC3339), at)
	}
	// The first id whose first event at or above it is at or after low.
	lo, hi, probes := oldest.ID, cur+1, 0
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, _, err := probe(ctx, log, mid)
		if err != nil {
			return ch, err
		}
		probes++
		if e == nil || int64(e.Time) >= low {
			hi = mid
		} else {
			lo = e.ID + 1
		}
	}
	return scanFromMargin(ctx, log, ch, lo, target, margin, maxScan, probes)
}

// scanFromMargin reads the log from id start on for the first event at or
// after target (unix seconds) and records the choice in ch.
func scanFromMargin(ctx context.Context, log seedLog, ch seedChoice, start, target int64, margin time.Duration, maxScan, probes int) (seedChoice, error) {
	after, scanned := start-1, 0
	for scanned < maxScan {
		f, err := log.NextEvents(ctx, after, min(1000, maxScan-scanned), nil)
		if err != nil {
			return ch, fmt.Errorf("get_next_notification after %d: %w", after, err)
		}
		// The bisection ended on an event it read, so a gap even on the
		// first fetch means events were cleaned since: their changes would
		// be skipped.
		if f.Continuity == hms.Gap {
			return ch, fmt.Errorf("events after %d were cleaned from the metastore's log while it was scanned: seed a later time", after)
		}
		for i := range f.Events {
			e := f.Events[i]
			scanned++
			if int64(e.Time) >= target {
				ch.cursor, ch.first = e.ID-1, &e
				ch.notes = append(ch.notes, fmt.Sprintf("bisected the log in %d probes to id %d, the first event at or after %s (the margin of %s); scanned %d events from there",
					probes, start, time.Unix(target, 0).Add(-margin).UTC().Format(time.RFC3339), margin, scanned))
				return ch, nil
			}
		}
		if len(f.Events) == 0 {
			// Not f.Current: it is read after the empty fetch, so an event
			// written in between would lie at or below the cursor unapplied.
			ch.cursor = after
			ch.notes = append(ch.notes, fmt.Sprintf("no event at or after %s yet (%d scanned from id %d): the cursor is the last event's id",
				time.Unix(target, 0).UTC().Format(time.RFC3339), scanned, start))
			return ch, nil
		}
		after = f.Last
	}
	ch.cursor = start - 1
	if e, _, err := probe(ctx, log, start); err == nil {
		ch.first = e
	}
	ch.notes = append(ch.notes, fmt.Sprintf("more than %d events within the margin of %s: the cursor starts at the margin's first event, id %d (the events up to the time are applied again, which is harmless)",
		maxScan, margin, start))
	return ch, nil
}
