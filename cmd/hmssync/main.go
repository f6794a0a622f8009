// Command hmssync is the sidecar that keeps Doris FEs in step with a Hive Metastore,
// together with its operator and developer tools. Each subcommand lives in a file
// named after it; this file only assembles them.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func newApp() *cli.App {
	app := &cli.App{
		Name:  "hmssync",
		Usage: "keep Apache Doris frontends in step with a Hive Metastore",
		Commands: []*cli.Command{
			runCommand(),
			waitCommand(),
			demoCommand(),
			statusCommand(),
			cursorCommand(),
			memberCommand(),
			eventsCommand(),
			devCommand(),
			benchCommand(),
			checkCommand(),
			versionCommand(),
			completionCommand(),
		},
		// Completion: the scripts of `hmssync completion` ask the binary
		// (--generate-bash-completion) for the words that may follow.
		EnableBashCompletion: true,
		Flags:                []cli.Flag{versionFlag},
		HideVersion:          true, // versionFlag instead
		Action:               rootAction,
		// Errors are printed once, by main, so that every command fails the same way.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	guardArgs(app)
	return app
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "hmssync:", msg)
		}
		if ec, ok := err.(cli.ExitCoder); ok {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}
