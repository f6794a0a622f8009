package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// urfave/cli stops reading flags at a command's first positional argument and
// hands whatever follows to the command as arguments, so `hmssync run
// sidecar.yaml` (forgotten --config) and `cursor set 2200 --catalog hive` (flag
// after the argument) would run with defaults or a dropped flag. checkArgs reads
// the whole command line against the command tree before any command runs and
// refuses both with the corrected command line. Flags after arguments are
// refused rather than reordered: a reordering parser would have to guess
// whether a token such as -1 is a flag or a value, and refusing shows the
// operator the one spelling that every version of the CLI reads the same way.

// argCount is how many positional arguments a command takes: one per word of
// its ArgsUsage (cursor set's "N"), none when ArgsUsage is blank.
func argCount(cmd *cli.Command) int { return len(strings.Fields(cmd.ArgsUsage)) }

// checkArgs walks args (without the program name) down app's command tree and
// returns an error naming the first argument the command does not take, with a
// hint: the corrected command line for a flag placed after an argument,
// --config for what looks like a file, the command's subcommands otherwise.
// Flags it does not know are left to urfave/cli, which reports them itself.
func checkArgs(app *cli.App, args []string) error {
	path := []string{app.Name}
	flags := append(slices.Clone(app.Flags), cli.HelpFlag)
	subs := app.Commands
	var leaf *cli.Command
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 && len(positional) > 0 && lookupFlag(flags, a) == nil {
			break // not this command's flag: the arguments are judged below
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if len(positional) > 0 {
				// positional is args[start:i]: move what follows before it.
				start := i - len(positional)
				fixed := append(append(append([]string{app.Name}, args[:start]...), args[i:]...), positional...)
				return fmt.Errorf("unexpected argument %s after %s: flags go before the arguments (did you mean %s?)",
					a, strings.Join(positional, " "), strings.Join(fixed, " "))
			}
			f := lookupFlag(flags, a)
			if f == nil {
				return nil // unknown flag: urfave/cli says so
			}
			if takesValue(f) && !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		if len(positional) == 0 && len(subs) > 0 {
			if a == "help" || a == "h" {
				return nil // help takes command names as arguments
			}
			if cmd := findCommand(subs, a); cmd != nil {
				path = append(path, cmd.Name)
				flags = append(slices.Clone(cmd.Flags), cli.HelpFlag)
				subs = cmd.Subcommands
				leaf = cmd
				continue
			}
		}
		positional = append(positional, a)
	}
	want := 0
	if leaf != nil {
		want = argCount(leaf)
	}
	if len(positional) <= want {
		return nil
	}
	stray := positional[want]
	name := strings.Join(path, " ")
	switch {
	case lookupFlag(flags, "--config") != nil && looksLikeFile(stray):
		return fmt.Errorf("unexpected argument %s (did you mean --config %s?)", stray, stray)
	case len(subs) > 0:
		names := make([]string, 0, len(subs))
		for _, s := range subs {
			if !s.Hidden {
				names = append(names, s.Name)
			}
		}
		return fmt.Errorf("unexpected argument %s: %s has no command %s (commands: %s; see %s --help)",
			stray, name, stray, strings.Join(names, ", "), name)
	case want == 0:
		return fmt.Errorf("unexpected argument %s: %s takes no arguments (see %s --help)", stray, name, name)
	default:
		return fmt.Errorf("unexpected argument %s: %s takes %d (%s) (see %s --help)", stray, name, want, leaf.ArgsUsage, name)
	}
}

// guardArgs makes app refuse, before any command runs, the arguments its
// commands do not take (checkArgs). It runs in the root's Before, which
// urfave/cli calls before it checks a subcommand's required flags, so the hint
// is not hidden behind "Required flag not set".
func guardArgs(app *cli.App) {
	before := app.Before
	app.Before = func(c *cli.Context) error {
		if err := checkArgs(app, c.Args().Slice()); err != nil {
			return err
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if slices.Contains(c.Names(), name) {
			return c
		}
	}
	return nil
}

// lookupFlag finds the flag that token (-x, --name or --name=value) names.
func lookupFlag(flags []cli.Flag, token string) cli.Flag {
	name := strings.TrimLeft(token, "-")
	name, _, _ = strings.Cut(name, "=")
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return true
}

// looksLikeFile: an existing file, or a name with a configuration extension.
func looksLikeFile(s string) bool {
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		if strings.HasSuffix(s, ext) {
			return true
		}
	}
	st, err := os.Stat(s)
	return err == nil && !st.IsDir()
}
