package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestEveryCommandRefusesStrayArguments walks the app's command tree: every
// command refuses a positional argument it does not take, with a hint
// (--config for a file where the command reads one, the subcommands of a group),
// and every command refuses its own flags placed after an argument, naming the
// command line that does what was meant.
func TestEveryCommandRefusesStrayArguments(t *testing.T) {
	app := newApp()
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			p := append(slices.Clone(path), cmd.Name)
			walk(p, cmd.Subcommands)
			t.Run(strings.Join(p, "_"), func(t *testing.T) {
				// The arguments it takes, then one more that looks like a file.
				args := slices.Clone(p)
				for range argCount(cmd) {
					args = append(args, "2200")
				}
				args = append(args, "run/sidecar.yaml")
				err := checkArgs(app, args)
				if err == nil || !strings.Contains(err.Error(), "unexpected argument run/sidecar.yaml") {
					t.Fatalf("%v: %v; want unexpected argument run/sidecar.yaml", args, err)
				}
				if lookupFlag(cmd.Flags, "--config") != nil && !strings.Contains(err.Error(), "(did you mean --config run/sidecar.yaml?)") {
					t.Errorf("%v: %v; want the --config hint", args, err)
				}
				if len(cmd.Subcommands) > 0 && !strings.Contains(err.Error(), cmd.Subcommands[0].Name) {
					t.Errorf("%v: %v; want the subcommands listed", args, err)
				}

				// A flag of the command after an argument is refused with
				// the command line that puts it first.
				if len(cmd.Flags) == 0 {
					return
				}
				f := cmd.Flags[0]
				flag := []string{"--" + f.Names()[0]}
				if takesValue(f) {
					flag = append(flag, "x")
				}
				args = append(append(slices.Clone(p), "2200"), flag...)
				fixed := "hmssync " + strings.Join(append(append(slices.Clone(p), flag...), "2200"), " ")
				err = checkArgs(app, args)
				if err == nil || !strings.Contains(err.Error(), "unexpected argument") || !strings.Contains(err.Error(), "(did you mean "+fixed+"?)") {
					t.Errorf("%v: %v; want it refused with %q", args, err, fixed)
				}
			})
		}
	}
	walk(nil, app.Commands)

	// What the commands take is accepted.
	for _, ok := range [][]string{
		{"cursor", "set", "--catalog", "hive", "--force", "2200"},
		{"cursor", "set", "--catalog=hive", "2200"},
		{"cursor", "set", "--catalog", "hive", "--", "2200"},
		{"run", "--config", "run/sidecar.yaml"},
		{"help", "cursor"},
		{"cursor", "help", "set"},
		{"status", "--json", "--cluster", "x"},
	} {
		if err := checkArgs(app, ok); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
}

// TestStrayArgumentsFailTheCommand runs the app: the refusal is the command's
// error (main prints it and exits 1), before a required flag is complained of.
func TestStrayArgumentsFailTheCommand(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"version extra", "unexpected argument extra: hmssync version takes no arguments"},
		{"wait run/sidecar.yaml", "unexpected argument run/sidecar.yaml (did you mean --config run/sidecar.yaml?)"},
		{"cursor set 2200 --catalog hive", "unexpected argument --catalog after 2200: flags go before the arguments (did you mean hmssync cursor set --catalog hive 2200?)"},
		{"cursor set --catalog hive 2200 --force", "(did you mean hmssync cursor set --catalog hive --force 2200?)"},
		{"cursor gte --catalog hive", "hmssync cursor has no command gte (commands: get, set, reset"},
		{"nosuch", "unexpected argument nosuch: hmssync has no command nosuch"},
	} {
		app := newApp()
		var out bytes.Buffer
		app.Writer, app.ErrWriter = &out, &out
		err := app.Run(append([]string{"hmssync"}, strings.Fields(tc.args)...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("hmssync %s: %v (output %q); want an error containing %q", tc.args, err, out.String(), tc.want)
		}
	}
}
