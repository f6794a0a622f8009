package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// runCLI runs `hmssync <command> --cluster test --etcd-endpoints endpoint
// args...` and returns stdout. (Flags go before positional arguments.)
func runCLI(t *testing.T, endpoint, command string, args ...string) (string, error) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	full := append([]string{"hmssync"}, strings.Fields(command)...)
	full = append(full, "--cluster", "test", "--etcd-endpoints", endpoint)
	err := app.Run(append(full, args...))
	return out.String(), err
}

func TestCursorGetSetReset(t *testing.T) {
	srv := etcdtest.New(t)
	ep := srv.Endpoints()[0]
	ctx := context.Background()
	key := "/hmssync/test/catalogs/hive/cursor"
	stored := func() string {
		resp, err := srv.Client.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "(absent)"
		}
		return string(resp.Kvs[0].Value)
	}

	if out, err := runCLI(t, ep, "cursor get", "--catalog", "hive", "--allow-new"); err != nil || out != "unset\n" {
		t.Fatalf("get on a fresh cluster: %q, %v; want unset", out, err)
	}

	// Without --force: refused, explained, nothing written.
	_, err := runCLI(t, ep, "cursor set", "--catalog", "hive", "--allow-new", "48213")
	if err == nil || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), key) {
		t.Fatalf("set without --force: %v; want a refusal naming --force and the key", err)
	}
	if got := stored(); got != "(absent)" {
		t.Fatalf("refused set wrote %q", got)
	}
	if !strings.Contains(err.Error(), "continues after event 48213") {
		t.Errorf("set without --force: %v; want it to say what the master does with 48213", err)
	}

	// With no sidecar running for the master role, nobody would take the
	// value up: refused, explained, nothing written.
	_, err = runCLI(t, ep, "cursor set", "--catalog", "hive", "--allow-new", "--force", "48213")
	if err == nil || !strings.Contains(err.Error(), "no member of the cluster campaigns") || !strings.Contains(err.Error(), "/hmssync/test/election/") {
		t.Fatalf("set --force with no master: %v; want a refusal saying no member campaigns, naming the election prefix", err)
	}
	if got := stored(); got != "(absent)" {
		t.Fatalf("set with no master wrote %q", got)
	}

	// A sidecar campaigns: the operator's value is written.
	runMember(t, srv.NewClient(t), "fe-a")
	if out, err := runCLI(t, ep, "cursor set", "--catalog", "hive", "--allow-new", "--force", "48213"); err != nil || out != "unset -> 48213\n" {
		t.Fatalf("set --force: %q, %v", out, err)
	}
	if got := stored(); got != "48213" {
		t.Fatalf("etcd holds %q; want 48213", got)
	}
	if out, err := runCLI(t, ep, "cursor get", "--catalog", "hive"); err != nil || out != "48213\n" {
		t.Fatalf("get: %q, %v", out, err)
	}

	if _, err := runCLI(t, ep, "cursor reset", "--catalog", "hive"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("reset without --force: %v", err)
	}
	if out, err := runCLI(t, ep, "cursor reset", "--catalog", "hive", "--force"); err != nil || out != "48213 -> -1\n" {
		t.Fatalf("reset --force: %q, %v", out, err)
	}
	if got := stored(); got != "-1" {
		t.Fatalf("etcd holds %q after reset; want -1", got)
	}

	for _, bad := range [][]string{
		{"cursor set", "--catalog", "hive", "--force", "abc"},
		{"cursor set", "--catalog", "hive", "--force", "-2"},
		{"cursor set", "--catalog", "hive", "--force"},
		{"cursor set", "--catalog", "hive", "--force", "1", "2"},
		{"cursor get"},
		{"cursor get", "--catalog", "hive", "extra"},
	} {
		if _, err := runCLI(t, ep, bad[0], bad[1:]...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if got := stored(); got != "-1" {
		t.Fatalf("rejected commands changed the cursor to %q", got)
	}

	// A bad value: reported with key and value; set --force repairs it.
	if _, err := srv.Client.Put(ctx, key, "abc"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, ep, "cursor get", "--catalog", "hive"); err == nil ||
		!strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), `"abc"`) {
		t.Fatalf("get of abc: %v; want the key and the value named", err)
	}
	if out, err := runCLI(t, ep, "cursor set", "--catalog", "hive", "--force", "7"); err != nil || out != "\"abc\" -> 7\n" {
		t.Fatalf("set over abc: %q, %v", out, err)
	}
}

// runMember campaigns for the master role of cluster "test" as a sidecar does,
// until the test ends, and waits until it is master.
func runMember(t *testing.T, cli *clientv3.Client, name string) {
	t.Helper()
	el, err := election.New(election.Config{Client: cli, Prefix: "/hmssync/test/election", Name: name,
		LeaseTTL: 3 * time.Second, RequestTimeout: 900 * time.Millisecond, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- el.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("member %s: %v", name, err)
		}
	})
	testutil.Await(t, 10*time.Second, name+" master", func() (bool, string) { return el.IsMaster(), "" })
}

// TestCursorCommandsRefuseACatalogNoMemberPublished: a --catalog that no key
// of the cluster names (a typo) is refused by get, set and reset, listing the
// catalogs that exist and writing nothing; a catalog named only in a member's
// status is known; --allow-new lets a new name through.
func TestCursorCommandsRefuseACatalogNoMemberPublished(t *testing.T) {
	srv := etcdtest.New(t)
	ep := srv.Endpoints()[0]
	ctx := context.Background()
	if _, err := srv.Client.Put(ctx, "/hmssync/test/catalogs/hive/cursor", "5"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.Put(ctx, "/hmssync/test/members/fe-a/status", `{"member":"fe-a","role":"follower","catalogs":{"ice":{"cursor":3}}}`); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{
		{"cursor get", "--catalog", "nosuch"},
		{"cursor reset", "--catalog", "hvie", "--force"},
		{"cursor reset", "--catalog", "hvie"},
		{"cursor set", "--catalog", "hvie", "--force", "3"},
	} {
		_, err := runCLI(t, ep, bad[0], bad[1:]...)
		if err == nil || !strings.Contains(err.Error(), "no member of cluster /hmssync/test has published catalog "+bad[2]) ||
			!strings.Contains(err.Error(), "(catalogs: hive, ice)") || !strings.Contains(err.Error(), "--allow-new") {
			t.Errorf("%v: %v; want a refusal naming the catalog, listing hive and ice and --allow-new", bad, err)
		}
	}
	resp, err := srv.Client.Get(ctx, "/hmssync/test/catalogs/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Errorf("refused commands left %d keys under catalogs/; want only hive's cursor", len(resp.Kvs))
	}
	if out, err := runCLI(t, ep, "cursor get", "--catalog", "ice"); err != nil || out != "unset\n" {
		t.Errorf("get of a catalog named in a member status: %q, %v; want unset", out, err)
	}
	if out, err := runCLI(t, ep, "cursor get", "--catalog", "nosuch", "--allow-new"); err != nil || out != "unset\n" {
		t.Errorf("get --allow-new: %q, %v; want unset", out, err)
	}
	if out, err := runCLI(t, ep, "cursor reset", "--catalog", "new", "--allow-new", "--force"); err != nil || out != "unset -> -1\n" {
		t.Errorf("reset --allow-new --force: %q, %v", out, err)
	}
}
