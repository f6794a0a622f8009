package main

import (
	"fmt"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); otherwise the
// module version or VCS revision recorded by the Go toolchain is used.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the hmssync version",
		Action: func(c *cli.Context) error {
			_, err := fmt.Fprintln(c.App.Writer, "hmssync", buildVersion())
			return err
		},
	}
}
