package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// PLACEHOLDER(issue 5): replaced by the real command.
func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "(not built yet: issue 5)",
		Action: func(*cli.Context) error {
			return errors.New("demo is not built yet (issue 5)")
		},
	}
}
