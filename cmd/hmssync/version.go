package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// version and commit are set at link time (-ldflags "-X main.version=v1.2.3
// -X main.commit=abc123"), as scripts/build-image.sh does; otherwise the module
// version and VCS revision recorded by the Go toolchain are used.
var (
	version = ""
	commit  = ""
)

// buildInfo is what `hmssync version` prints and what the sidecar publishes.
type buildInfo struct {
	Version   string
	Commit    string // "unknown" when neither -ldflags nor the toolchain recorded one
	Modified  bool   // the working tree had uncommitted changes at build time
	GoVersion string
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.GoVersion = bi.GoVersion
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Commit == "" {
					b.Commit = s.Value
				}
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "dev"
		if len(b.Commit) >= 12 {
			b.Version = "dev-" + b.Commit[:12]
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

func buildVersion() string { return readBuildInfo().Version }

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:   "version",
		Usage:  "print the hmssync version, the commit it was built from and the Go version",
		Action: func(c *cli.Context) error { return printVersion(c.App.Writer) },
	}
}

// versionFlag is the root's --version (-v): it prints what `hmssync version`
// prints (urfave/cli's own version flag prints a single line of its own).
var versionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version (as hmssync version does)"}

// rootAction runs for `hmssync` without a command: --version, else the help.
func rootAction(c *cli.Context) error {
	if c.Bool(versionFlag.Name) {
		return printVersion(c.App.Writer)
	}
	return cli.ShowAppHelp(c)
}

func printVersion(w io.Writer) error {
	b := readBuildInfo()
	dirty := ""
	if b.Modified {
		dirty = " (modified)"
	}
	_, err := fmt.Fprintf(w, "hmssync %s\ncommit %s%s\ngo %s\n", b.Version, b.Commit, dirty, b.GoVersion)
	return err
}
