package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/cursorstore"
)

// memberCommand manages the cluster's members as etcd records them.
func memberCommand() *cli.Command {
	return &cli.Command{
		Name:  "member",
		Usage: "manage the members etcd records for a cluster",
		Subcommands: []*cli.Command{
			{
				Name:  "forget",
				Usage: "delete a decommissioned member's keys (durable cursors, epochs, status, holder); refused while it is alive",
				Description: "Deletes every key under <prefix>/<cluster>/members/NAME/ in one etcd transaction and prints them. " +
					"Refused (exit 1) while the member is alive: its holder or status key exists (both are bound to its lease) " +
					"or it campaigns in the election. A forgotten member that starts again starts as a new one does: a full refresh of its FE, or from the catalog's seed (hmssync cursor seed).",
				ArgsUsage: "NAME",
				Flags:     etcdFlags(),
				Action:    memberForget,
			},
		},
	}
}

func memberForget(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("member forget takes one argument, the member name, after the flags (got %q); e.g. hmssync member forget --cluster doris-prod doris-fe-3", c.Args().Slice())
	}
	name := c.Args().First()
	if err := cursorstore.ValidateName("member", name); err != nil {
		return fmt.Errorf("member forget: %w", err)
	}
	store, cli, err := openStore(c)
	if err != nil {
		return err
	}
	defer cli.Close()
	keys, err := store.ForgetMember(c.Context, name)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "forgot member %s of %s: deleted %d keys\n  %s\n", name, store.Root(), len(keys), strings.Join(keys, "\n  "))
	return err
}
