package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// PLACEHOLDER(issue 3): replaced by the real command.
func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "(not built yet: issue 3)",
		Action: func(*cli.Context) error {
			return errors.New("status is not built yet (issue 3)")
		},
	}
}
