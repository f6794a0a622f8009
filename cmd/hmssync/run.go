package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// PLACEHOLDER(issue 5): replaced by the real command.
func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "(not built yet: issue 5)",
		Action: func(*cli.Context) error {
			return errors.New("run is not built yet (issue 5)")
		},
	}
}
