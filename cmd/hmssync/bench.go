package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// PLACEHOLDER(issue 6): replaced by the real command.
func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "(not built yet: issue 6)",
		Action: func(*cli.Context) error {
			return errors.New("bench is not built yet (issue 6)")
		},
	}
}
