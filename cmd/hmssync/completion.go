package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// completionCommand prints a shell's completion script. bash and zsh complete
// by asking the binary itself (urfave/cli's --generate-bash-completion, which
// the app enables: it lists the commands, subcommands and flags that fit the
// words typed so far); fish gets the static script urfave/cli generates from
// the command tree.
func completionCommand() *cli.Command {
	return &cli.Command{
		Name:  "completion",
		Usage: "print the shell completion script for bash, zsh or fish",
		Description: "bash:  source <(hmssync completion bash)   (or save it under /etc/bash_completion.d/hmssync)\n" +
			"zsh:   source <(hmssync completion zsh)    (or save it as _hmssync in a directory of $fpath)\n" +
			"fish:  hmssync completion fish > ~/.config/fish/completions/hmssync.fish",
		ArgsUsage: "SHELL",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("completion takes one argument, the shell: bash, zsh or fish (got %q)", c.Args().Slice())
			}
			switch sh := c.Args().First(); sh {
			case "bash":
				return writeScript(c.App.Writer, bashCompletion, c.App.Name)
			case "zsh":
				return writeScript(c.App.Writer, zshCompletion, c.App.Name)
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return fmt.Errorf("fish completion: %w", err)
				}
				_, err = io.WriteString(c.App.Writer, s)
				return err
			default:
				return fmt.Errorf("completion %s: no such shell; want bash, zsh or fish", sh)
			}
		},
	}
}

func writeScript(w io.Writer, script, prog string) error {
	_, err := fmt.Fprintf(w, script, prog)
	return err
}

// bashCompletion asks the binary for the words that may follow the ones typed
// (the current word excluded; a flag being typed is passed on so that flags
// are offered) and lets compgen keep those that start with the current word.
// %[1]s is the program's name.
const bashCompletion = `# bash completion for %[1]s; load with: source <(%[1]s completion bash)
__%[1]s_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local -a typed=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local candidates
  if [[ "$cur" == -* ]]; then
    candidates=$("${typed[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    candidates=$("${typed[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -o default -F __%[1]s_complete %[1]s
`

// zshCompletion does the same for zsh: the binary's words, one a line, are
// offered as they are; with none, file names.
const zshCompletion = `#compdef %[1]s
# zsh completion for %[1]s; load with: source <(%[1]s completion zsh)
__%[1]s_complete() {
  local cur="${words[CURRENT]}"
  local -a typed candidates
  typed=("${(@)words[1,CURRENT-1]}")
  if [[ "$cur" == -* ]]; then
    candidates=("${(@f)$("${typed[@]}" "$cur" --generate-bash-completion 2>/dev/null)}")
  else
    candidates=("${(@f)$("${typed[@]}" --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ -n "${candidates[1]}" ]]; then
    compadd -- "${candidates[@]}"
  else
    _files
  fi
}
compdef __%[1]s_complete %[1]s
`
