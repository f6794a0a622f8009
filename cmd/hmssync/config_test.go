package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestCheckConfigPrintsNoSecret(t *testing.T) {
	t.Setenv("HMSSYNC_FE_PASSWORD", "hunter2")
	t.Setenv("HMSSYNC_MEMBER", "m")
	var out strings.Builder
	app := newApp()
	app.Writer = &out
	if err := app.Run([]string{"hmssync", "run", "--check-config", "--fe-dialect", "native", "--cluster", "c9"}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "hunter2") {
		t.Errorf("--check-config shows the password:\n%s", s)
	}
	for _, want := range []string{"cluster: c9", "dialect: native", "member: m"} {
		if !strings.Contains(s, want) {
			t.Errorf("--check-config output lacks %q:\n%s", want, s)
		}
	}
}

// A password in an etcd endpoint given to an operator command is refused and
// redacted, as run refuses it (config's TestUserInfoInURLsIsRefusedAndRedacted).
func TestOperatorCommandsRefuseUserInfoRedacted(t *testing.T) {
	app := newApp()
	app.Writer, app.ErrWriter = &strings.Builder{}, &strings.Builder{}
	err := app.Run([]string{"hmssync", "status", "--cluster", "c", "--etcd-endpoints", "http://root:hunter2@127.0.0.1:1", "--etcd-dial-timeout", "200ms"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "REDACTED") {
		t.Errorf("status with a password in the endpoint: %v; want it refused, redacted", err)
	}
}

// The operator commands read password files as run does (config's
// TestPasswordFiles): the file wins, a bounded read, a warning when others may
// read it.
func TestOperatorCommandsReadPasswordFilesAsRunDoes(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}

	// The operator commands read the same way.
	t.Setenv("HMSSYNC_ETCD_PASSWORD", "from-env")
	var got etcdTarget
	var stderr strings.Builder
	app := &cli.App{Flags: etcdFlags(), ErrWriter: &stderr, Action: func(c *cli.Context) error {
		var err error
		got, err = etcdTargetFromFlags(c)
		return err
	}}
	if err := app.Run([]string{"x", "--cluster", "c", "--etcd-username", "u", "--etcd-password-file", open}); err != nil {
		t.Fatal(err)
	}
	if got.Client.Password != "from-file" {
		t.Errorf("operator commands: password %q; want the file's, as run reads it", got.Client.Password)
	}
	if !strings.Contains(stderr.String(), "chmod 600") {
		t.Errorf("operator commands: stderr %q; want the warning about the open file", stderr.String())
	}
	if err := app.Run([]string{"x", "--cluster", "c", "--etcd-password-file", big}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("operator commands with a 1 MiB password file: %v; want it refused by its size", err)
	}
}

// --check-config prints what the sidecar does: a catalog without hms_auth
// connects with mechanism none, which is printed so.
func TestCheckConfigPrintsMechanismNone(t *testing.T) {
	f := writeFile(t, "cluster: c\nmember: m\netcd: {endpoints: [http://127.0.0.1:2379]}\nfe: {url: http://127.0.0.1:8030, dialect: log}\n"+
		"catalogs:\n  - {name: hive, hms_uris: [thrift://127.0.0.1:9083]}\n")
	out, err := runArgs("run", "--config", f, "--check-config")
	if err != nil || !strings.Contains(out, "hms_auth:\n        mechanism: none\n") {
		t.Fatalf("--check-config: %v\n%s\nwant hms_auth.mechanism: none", err, out)
	}
}
