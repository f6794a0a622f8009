package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// PLACEHOLDER(issue 2): replaced by the real command.
func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:  "events",
		Usage: "(not built yet: issue 2)",
		Action: func(*cli.Context) error {
			return errors.New("events is not built yet (issue 2)")
		},
	}
}
