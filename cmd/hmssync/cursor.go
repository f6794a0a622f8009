package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// PLACEHOLDER(issue 3): replaced by the real command.
func cursorCommand() *cli.Command {
	return &cli.Command{
		Name:  "cursor",
		Usage: "(not built yet: issue 3)",
		Action: func(*cli.Context) error {
			return errors.New("cursor is not built yet (issue 3)")
		},
	}
}
