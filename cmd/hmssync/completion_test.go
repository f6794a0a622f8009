package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each shell's script is produced and names the program and, for fish, which
// completes from a static script, the commands and their subcommands; an
// unknown shell is refused.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string][]string{
		"bash": {"complete -o default -F __hmssync_complete hmssync", "--generate-bash-completion"},
		"zsh":  {"#compdef hmssync", "compdef __hmssync_complete hmssync", "--generate-bash-completion"},
		"fish": {"complete -c hmssync", "'cursor'", "'seed'", "'completion'", "'check'", "catalog"},
	} {
		out, err := runArgs("completion", shell)
		if err != nil {
			t.Fatalf("completion %s: %v", shell, err)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("completion %s lacks %q:\n%s", shell, w, out)
			}
		}
	}
	for _, bad := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		if _, err := runArgs(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// The bash script, loaded in a real bash, completes the commands, a command's
// subcommands and its flags by asking the binary.
func TestBashCompletionCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	self, err := os.Executable()
	must(t, err)
	dir := t.TempDir()
	must(t, os.Symlink(self, filepath.Join(dir, "hmssync")))
	script, err := runArgs("completion", "bash")
	must(t, err)
	complete := func(words ...string) string {
		t.Helper()
		// COMP_WORDS as bash fills it; the last word is the one completed.
		arr := "(" + strings.Join(quoteAll(words), " ") + ")"
		cmd := exec.Command(bash, "--norc", "-c", script+"\nCOMP_WORDS="+arr+"; COMP_CWORD=$((${#COMP_WORDS[@]}-1)); __hmssync_complete; printf '%s\\n' \"${COMPREPLY[@]}\"")
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "HMSSYNC_TEST_AS_CLI=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
		}
		return string(out)
	}
	if got := complete("hmssync", "cu"); strings.TrimSpace(got) != "cursor" {
		t.Errorf("hmssync cu<TAB> = %q; want cursor", got)
	}
	if got := complete("hmssync", "cursor", "s"); !strings.Contains(got, "set\n") || !strings.Contains(got, "seed\n") || strings.Contains(got, "get") {
		t.Errorf("hmssync cursor s<TAB> = %q; want set and seed", got)
	}
	if got := complete("hmssync", "cursor", "seed", "--from"); !strings.Contains(got, "--from-time") || !strings.Contains(got, "--from-id") {
		t.Errorf("hmssync cursor seed --from<TAB> = %q; want --from-time and --from-id", got)
	}
}

func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return out
}
