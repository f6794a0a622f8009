package main

import "github.com/urfave/cli/v2"

// devCommand groups the test doubles run as processes, for manual testing and for
// the end-to-end scripts.
func devCommand() *cli.Command {
	return &cli.Command{
		Name:        "dev",
		Usage:       "run hmssync's fake metastore, fake FE or a single-node etcd as a process",
		Subcommands: []*cli.Command{devHMSCommand(), devFECommand(), devEtcdCommand()},
	}
}
