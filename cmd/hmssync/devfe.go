package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// PLACEHOLDER(issue 4): replaced by the real command.
func devFECommand() *cli.Command {
	return &cli.Command{
		Name:  "fe",
		Usage: "(not built yet: issue 4)",
		Action: func(*cli.Context) error {
			return errors.New("fe is not built yet (issue 4)")
		},
	}
}
