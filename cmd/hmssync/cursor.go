package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/internal/names"
)

// cursorCommand reads and overrides a catalog's master cursor: the operator's
// tool for skipping a poison event, replaying a range, or forcing a full refresh.
func cursorCommand() *cli.Command {
	// Each subcommand gets its own flag values.
	catalog := func() cli.Flag {
		return &cli.StringFlag{Name: "catalog", Required: true, Usage: "the FE catalog name (catalogs[].name)",
			Action: func(_ *cli.Context, v string) error {
				if err := names.Catalog(v); err != nil {
					return fmt.Errorf("--catalog %w", err)
				}
				return nil
			}}
	}
	force := func() cli.Flag { return &cli.BoolFlag{Name: "force", Usage: "really change the cursor"} }
	allowNew := func() cli.Flag {
		return &cli.BoolFlag{Name: "allow-new", Usage: "accept a catalog that no member of the cluster has published yet"}
	}
	withEtcd := func(fs ...cli.Flag) []cli.Flag { return append(append(fs, allowNew()), etcdFlags()...) }
	return &cli.Command{
		Name:  "cursor",
		Usage: "read or override a catalog's master cursor in etcd",
		Subcommands: []*cli.Command{
			{
				Name:      "get",
				Usage:     "print the master cursor (the last HMS event id applied), or unset",
				ArgsUsage: " ",
				Flags:     withEtcd(catalog()),
				Action:    cursorGet,
			},
			{
				Name:  "set",
				Usage: "set the master cursor to event id N: the running master continues after N (needs --force)",
				Description: "Compare-and-sets the master cursor and prints old -> new. " +
					strings.ToUpper(cursorSetEffect("N")[:1]) + cursorSetEffect("N")[1:] + ".",
				ArgsUsage: "N",
				Flags:     withEtcd(catalog(), force()),
				Action:    cursorSet,
			},
			{
				Name:      "reset",
				Usage:     "set the master cursor to -1 so that the master full-refreshes (needs --force)",
				ArgsUsage: " ",
				Flags:     withEtcd(catalog(), force()),
				Action:    cursorReset,
			},
			cursorSeedCommand(),
		},
	}
}

func cursorGet(c *cli.Context) error {
	if c.Args().Present() {
		return fmt.Errorf("cursor get takes no arguments, got %q", c.Args().Slice())
	}
	store, cli, err := openStore(c)
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := knownCatalog(c, store); err != nil {
		return err
	}
	cur, err := store.MasterCursor(c.Context, c.String("catalog"))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(c.App.Writer, cur)
	return err
}

func cursorSet(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("cursor set takes one argument, the event id N, after the flags (got %q); e.g. hmssync cursor set --catalog hive --force 48213", c.Args().Slice())
	}
	n, err := strconv.ParseInt(c.Args().First(), 10, 64)
	if err != nil || n < cursorstore.Unknown {
		return fmt.Errorf("cursor set: %q is not an event id: want a decimal, 0 or more (or -1, which is what cursor reset does)", c.Args().First())
	}
	return setMasterCursor(c, n, cursorSetEffect(strconv.FormatInt(n, 10)), true)
}

// cursorSetEffect says what `cursor set N` does, for its help and its refusal
// without --force (docs/operations-etcd.md has the long form).
func cursorSetEffect(n string) string {
	return "the running master adopts it at once and continues after event " + n + ": " +
		"lowering the cursor sends the events after " + n + " to the master's FE again (a native FE skips those it already applied), " +
		"and it starts a new epoch, so each follower full-refreshes its FE once; " +
		"raising it makes the master skip the events up to " + n + " (their changes never reach its FE, nor any FE with the doris dialect, " +
		"but native followers still apply them; use it to step over an event the master's FE cannot apply); " +
		"a value beyond the metastore's current event id makes the master full-refresh and set the cursor back to that id; " +
		"a master that is paused adopts it when the pause key is removed, and one that starts later continues from its own cursor instead, " +
		"so it is refused while no sidecar of the cluster runs for the master role"
}

func cursorReset(c *cli.Context) error {
	if c.Args().Present() {
		return fmt.Errorf("cursor reset takes no arguments, got %q", c.Args().Slice())
	}
	// Any master honours -1, also one that starts later: no running master needed.
	return setMasterCursor(c, cursorstore.Unknown,
		"the master then refreshes the whole catalog on its FE and continues from the metastore's current event id", false)
}

// setMasterCursor refuses without --force, showing what would change and why
// it matters; with --force it sets the cursor and prints "old -> new". led
// writes only while a member campaigns for the master role (SetMasterLed).
func setMasterCursor(c *cli.Context, value int64, effect string, led bool) error {
	catalog := c.String("catalog")
	store, cli, err := openStore(c)
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := knownCatalog(c, store); err != nil {
		return err
	}
	if !c.Bool("force") {
		cur, err := store.MasterCursor(c.Context, catalog)
		from := cur.String()
		if err != nil {
			if cur.Raw == "" {
				return err
			}
			from = strconv.Quote(cur.Raw)
		}
		return fmt.Errorf("not changing the master cursor of catalog %s (%s) from %s to %d without --force: %s; "+
			"run again with --force to do it",
			catalog, store.MasterCursorKey(catalog), from, value, effect)
	}
	set := store.SetMaster
	if led {
		set = store.SetMasterLed
	}
	old, err := set(c.Context, catalog, value)
	if err != nil {
		return err
	}
	from := old.String()
	if old.Exists && old.Raw != from {
		from = strconv.Quote(old.Raw)
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s -> %d\n", from, value)
	return err
}

// knownCatalog refuses, unless --allow-new, a --catalog that the cluster does
// not know (cursorstore.Catalogs): a typo would otherwise read as unset, or
// create keys that no sidecar reads.
func knownCatalog(c *cli.Context, store *cursorstore.Store) error {
	if c.Bool("allow-new") {
		return nil
	}
	catalog := c.String("catalog")
	known, err := store.Catalogs(c.Context)
	if err != nil {
		return err
	}
	if slices.Contains(known, catalog) {
		return nil
	}
	list := "none yet"
	if len(known) > 0 {
		list = strings.Join(known, ", ")
	}
	return fmt.Errorf("no member of cluster %s has published catalog %s (catalogs: %s): check --catalog, "+
		"or pass --allow-new for a catalog whose sidecars have not run yet", store.Root(), catalog, list)
}
