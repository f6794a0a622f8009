package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

func TestEtcdFlagsFromEnvironment(t *testing.T) {
	srv := etcdtest.New(t)
	t.Setenv("HMSSYNC_ETCD_ENDPOINTS", "127.0.0.1:1,"+srv.Endpoints()[0])
	t.Setenv("HMSSYNC_CLUSTER", "envcluster")
	t.Setenv("HMSSYNC_ETCD_PREFIX", "/other")
	if _, err := srv.Client.Put(context.Background(), "/other/envcluster/catalogs/hive/cursor", "5"); err != nil {
		t.Fatal(err)
	}
	app := newApp()
	var out strings.Builder
	app.Writer = &out
	if err := app.Run([]string{"hmssync", "cursor", "get", "--catalog", "hive"}); err != nil || out.String() != "5\n" {
		t.Fatalf("cursor get from env settings: %q, %v", out.String(), err)
	}

	// No cluster at all: the message says how to give one.
	t.Setenv("HMSSYNC_CLUSTER", "")
	err := newApp().Run([]string{"hmssync", "cursor", "get", "--catalog", "hive"})
	if err == nil || !strings.Contains(err.Error(), "HMSSYNC_CLUSTER") {
		t.Fatalf("no cluster: %v", err)
	}
}

func TestPasswordComesFromEnvOrFile(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got etcdTarget
	app := newApp()
	for _, cmd := range app.Commands {
		if cmd.Name == "status" {
			cmd.Action = func(c *cli.Context) error {
				var err error
				got, err = etcdTargetFromFlags(c)
				return err
			}
		}
	}
	t.Setenv("HMSSYNC_ETCD_PASSWORD", "")
	if err := app.Run([]string{"hmssync", "status", "--cluster", "c", "--etcd-username", "u", "--etcd-password-file", pw}); err != nil {
		t.Fatal(err)
	}
	if got.Client.Username != "u" || got.Client.Password != "s3cret" {
		t.Fatalf("from file: user %q password %q", got.Client.Username, got.Client.Password)
	}
	t.Setenv("HMSSYNC_ETCD_PASSWORD", "fromenv")
	if err := app.Run([]string{"hmssync", "status", "--cluster", "c", "--etcd-username", "u", "--etcd-password-file", pw}); err != nil {
		t.Fatal(err)
	}
	// As in run (TestPasswordFileWinsAndIsTrimmed): a configured file wins.
	if got.Client.Password != "s3cret" {
		t.Fatalf("with both the file and HMSSYNC_ETCD_PASSWORD set: password %q, want the file's, as run reads it", got.Client.Password)
	}
}

// The operator commands accept exactly the names `run` accepts: a prefix, cluster
// or catalog that run would refuse is refused before etcd is dialled.
func TestOperatorCommandsValidateNamesAsRunDoes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--cluster", "c", "--etcd-prefix", "/hms sync"}, "--etcd-prefix"},
		{[]string{"status", "--cluster", "c", "--etcd-prefix", "/hmssync/"}, "--etcd-prefix"},
		{[]string{"status", "--cluster", "c\nd"}, "--cluster"},
		{[]string{"cursor", "get", "--cluster", "c", "--catalog", "hive cat"}, "--catalog"},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = &strings.Builder{}, &strings.Builder{}
		// Port 1 on loopback: a command that got as far as dialling would
		// report etcd unreachable instead.
		err := app.Run(append([]string{"hmssync"}, append(c.args, "--etcd-endpoints", "127.0.0.1:1", "--etcd-dial-timeout", "200ms")...))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "does not answer") {
			t.Errorf("%q: %v; want the name refused, naming %s", c.args, err, c.want)
		}
	}
}

// A scheme-less etcd endpoint (127.0.0.1:2379) is http:// to every command,
// through the flags and through the configuration file alike.
func TestSchemelessEtcdEndpointsAreHTTPEverywhere(t *testing.T) {
	srv := etcdtest.New(t)
	bare := strings.TrimPrefix(srv.Endpoints()[0], "http://")
	if bare == srv.Endpoints()[0] {
		t.Fatalf("endpoint %s has no http:// to strip", bare)
	}
	hms := hmstest.NewServer()
	defer hms.Close()
	must(t, hms.CreateDatabase("sales"))
	cfg := seedConfig(t, hms.URI(), bare, "http://127.0.0.1:1", "log")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--config", cfg, "--check-config"}, "http://" + bare},
		{[]string{"cursor", "get", "--cluster", "test", "--etcd-endpoints", bare, "--catalog", "hive", "--allow-new"}, "unset"},
		{[]string{"cursor", "seed", "--config", cfg, "--catalog", "hive", "--current"}, "seeded /hmssync/test/catalogs/hive/cursor"},
		{[]string{"cursor", "get", "--cluster", "test", "--etcd-endpoints", bare, "--catalog", "hive"}, "1"},
		{[]string{"status", "--cluster", "test", "--etcd-endpoints", bare}, ""},
		{[]string{"check", "--config", cfg}, "✓ etcd endpoint http://" + bare + " answers"},
	} {
		out, err := runArgs(c.args...)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("hmssync %s: %v\n%s\nwant it to reach etcd at %s (%q)", strings.Join(c.args, " "), err, out, bare, c.want)
		}
	}
}
