package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/testutil"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// readmeSingleNode returns the README's single-node commands (the block of
// "Running a sidecar"): the `hmssync run --embedded-etcd …` line, with its
// continuation, and the `hmssync status` that follows it, each split into
// words without the comments.
func readmeSingleNode(t *testing.T) (run, status []string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	i := strings.Index(section, "## Running a sidecar")
	if i < 0 {
		t.Fatal("README has no section Running a sidecar")
	}
	section = section[i:]
	block := section[strings.Index(section, "```sh\n")+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	block = strings.ReplaceAll(block, "\\\n", " ")
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		words := strings.Fields(line)
		switch {
		case len(words) > 2 && words[0] == "hmssync" && words[1] == "run" && words[2] == "--embedded-etcd":
			run = words
		case len(words) >= 2 && words[0] == "hmssync" && words[1] == "status" && run != nil:
			status = words
		}
	}
	if run == nil || status == nil {
		t.Fatalf("README's Running a sidecar block lacks `hmssync run --embedded-etcd …` followed by `hmssync status`:\n%s", block)
	}
	return run, status
}

// withValues replaces the value of each flag of words named in values.
func withValues(t *testing.T, words []string, values map[string]string) []string {
	t.Helper()
	out := append([]string(nil), words...)
	for i := 0; i+1 < len(out); i++ {
		if v, ok := values[out[i]]; ok {
			out[i+1] = v
			delete(values, out[i])
		}
	}
	if len(values) > 0 {
		t.Fatalf("%q lacks the flags %v", words, values)
	}
	return out
}

func runApp(ctx context.Context, args ...string) (string, error) {
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	err := app.RunContext(ctx, args)
	return out.String(), err
}

// The README's single-node set-up followed by a bare `hmssync status` shows the
// sidecar as master: status and cursor default --cluster to run's default and
// the endpoint to the embedded etcd's address. The same commands with --config
// read cluster and etcd from the sidecar's file. A typo in the cluster name is
// refused by status and cursor with the clusters that exist.
func TestReadmeSingleNodeThenStatus(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := (hmstest.Workload{Seed: 3, Databases: 1, Tables: 2, Events: 10}).Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	fe := fetest.NewServer(fetest.Options{Catalogs: []fetest.Catalog{{Name: "hive"}},
		Loader: func(context.Context, string) (fetest.Truth, error) { return srv.Snapshot(), nil }})
	defer fe.Close()

	run, status := readmeSingleNode(t)
	dir := t.TempDir()
	run = withValues(t, run, map[string]string{"--embedded-etcd": filepath.Join(dir, "etcd"), "--fe-url": fe.URL, "--hms-uris": srv.URI()})
	// The README's addresses are the defaults (etcd on 127.0.0.1:2379, HTTP
	// on :9108); the test moves them to free ports through their variables,
	// which every command reads.
	etcdAddr := freeAddr(t)
	t.Setenv("HMSSYNC_ETCD_EMBEDDED_LISTEN", etcdAddr)
	t.Setenv("HMSSYNC_HTTP_LISTEN", freeAddr(t))
	t.Setenv("HMSSYNC_ETCD_LEASE_TTL", "2s")
	t.Setenv("HMSSYNC_ETCD_REQUEST_TIMEOUT", "500ms")
	t.Setenv("HMSSYNC_MEMBER", "node-1")
	for _, v := range []string{"HMSSYNC_CLUSTER", "HMSSYNC_ETCD_PREFIX", "HMSSYNC_CONFIG", "HMSSYNC_ETCD_ENDPOINTS"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// urfave/cli keeps some state in package variables (its help command,
	// shared flags) that every App.Run writes as it sets up: the other
	// commands below start only once run's own set-up is over and its action
	// runs, which started orders.
	app := newApp()
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	started := make(chan struct{})
	for _, cmd := range app.Commands {
		if cmd.Name == "run" {
			action := cmd.Action
			cmd.Action = func(c *cli.Context) error { close(started); return action(c) }
		}
	}
	go func() { done <- app.RunContext(ctx, run) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%q: %v", run, err)
		}
	}()
	select {
	case <-started:
	case err := <-done:
		done <- err // for the deferred wait
		t.Fatalf("%q ended before its action ran: %v", run, err)
	}

	// status reaches the embedded etcd at its default endpoint; here the
	// variable names the test's port, as the embedded listen one does above.
	t.Setenv("HMSSYNC_ETCD_ENDPOINTS", "http://"+etcdAddr)
	var out string
	testutil.Await(t, 20*time.Second, "`"+strings.Join(status, " ")+"` to show node-1 as master", func() (bool, string) {
		var err error
		out, err = runApp(context.Background(), status...)
		return err == nil && strings.Contains(out, "master:  node-1"), fmt.Sprintf("%v\n%s", err, out)
	})
	if !strings.Contains(out, "cluster /hmssync/default ") {
		t.Errorf("status without --cluster shows %q, want cluster /hmssync/default (run's default):\n%s", firstLine(out), out)
	}
	if rows := tableRows(t, out, "node-1"); rows["node-1"]["ROLE"] != "master" || rows["node-1"]["CATALOG"] != "hive" {
		t.Errorf("status row of node-1: %q, want master of hive:\n%s", rows["node-1"], out)
	}
	// The master commits its first cursor after its full refresh.
	testutil.Await(t, 10*time.Second, "cursor get --catalog hive without --cluster to print the committed cursor", func() (bool, string) {
		got, err := runApp(context.Background(), "hmssync", "cursor", "get", "--catalog", "hive")
		return err == nil && regexp.MustCompile(`^\d+\n$`).MatchString(got), fmt.Sprintf("%q, %v", got, err)
	})

	// With --config: the sidecar's file names cluster and etcd; nothing else
	// is needed. The endpoint variable is not set here, so the file's embedded
	// etcd address is what status dials.
	os.Unsetenv("HMSSYNC_ETCD_ENDPOINTS")
	cfgFile := filepath.Join(dir, "sidecar.yaml")
	yaml := fmt.Sprintf("cluster: default\netcd: {embedded_dir: %q, embedded_listen: %q}\nfe: {url: %q}\ncatalogs: [{name: hive, hms_uris: [%q]}]\n",
		filepath.Join(dir, "etcd"), etcdAddr, fe.URL, srv.URI())
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HMSSYNC_ETCD_EMBEDDED_LISTEN", "")
	os.Unsetenv("HMSSYNC_ETCD_EMBEDDED_LISTEN")
	out, err := runApp(context.Background(), "hmssync", "status", "--config", cfgFile, "--json")
	var cs cursorstore.ClusterStatus
	if err != nil || json.Unmarshal([]byte(out), &cs) != nil || cs.Root != "/hmssync/default" || cs.Master != "node-1" {
		t.Errorf("status --config %s --json: %v\n%s\nwant cluster /hmssync/default with master node-1", cfgFile, err, out)
	}
	if got, err := runApp(context.Background(), "hmssync", "cursor", "get", "--config", cfgFile, "--catalog", "hive"); err != nil || !regexp.MustCompile(`^\d+\n$`).MatchString(got) {
		t.Errorf("cursor get --config: %q, %v; want the committed cursor", got, err)
	}

	// A flag given with --config sets its key, checked as run checks it.
	if _, err := runApp(context.Background(), "hmssync", "status", "--config", cfgFile, "--etcd-request-timeout", "0s"); err == nil ||
		!strings.Contains(err.Error(), "etcd.request_timeout") {
		t.Errorf("status --config with --etcd-request-timeout 0s: %v; want the loader's refusal of etcd.request_timeout", err)
	}

	// A typo in the cluster name, given as a flag or in the file.
	badFile := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(badFile, []byte(strings.Replace(yaml, "cluster: default", "cluster: defualt", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "no hmssync cluster under /hmssync/defualt/ (clusters: default)"
	for _, args := range [][]string{
		{"status", "--config", cfgFile, "--cluster", "defualt"},
		{"status", "--config", badFile},
		{"cursor", "get", "--config", badFile, "--catalog", "hive"},
		{"cursor", "reset", "--config", badFile, "--catalog", "hive", "--force"},
		{"cursor", "set", "--config", badFile, "--catalog", "hive", "--force", "3"},
		{"member", "forget", "--config", badFile, "node-1"},
	} {
		if _, err := runApp(context.Background(), append([]string{"hmssync"}, args...)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", args, err, want)
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// `member forget NAME` deletes a down member's keys and prints them; a member
// that campaigns is refused with the reason, and its keys stay.
func TestMemberForget(t *testing.T) {
	srv := etcdtest.New(t)
	ep := srv.Endpoints()[0]
	ctx := context.Background()
	store := cursorstore.New(srv.Client, "", "test", time.Second, nil)
	for _, m := range []string{"fe-old", "fe-live"} {
		if err := store.PutMemberCursor(ctx, m, "hive", 12, 1); err != nil {
			t.Fatal(err)
		}
	}
	runMember(t, srv.Client, "fe-live")

	out, err := runCLI(t, ep, "member forget", "fe-old")
	if err != nil || !strings.Contains(out, "forgot member fe-old of /hmssync/test: deleted 2 keys") ||
		!strings.Contains(out, "/hmssync/test/members/fe-old/cursors/hive") || !strings.Contains(out, "/hmssync/test/members/fe-old/epochs/hive") {
		t.Fatalf("member forget fe-old: %q, %v; want its two keys listed", out, err)
	}
	if resp, err := srv.Client.Get(ctx, "/hmssync/test/members/fe-old/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("keys of fe-old after forget: %v, %v; want none", resp, err)
	}
	_, err = runCLI(t, ep, "member forget", "fe-live")
	if err == nil || !strings.Contains(err.Error(), "not forgetting member fe-live: it is alive") || !strings.Contains(err.Error(), "election") {
		t.Errorf("member forget of a campaigning member: %v; want a refusal naming the election", err)
	}
	if resp, err := srv.Client.Get(ctx, "/hmssync/test/members/fe-live/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 2 {
		t.Errorf("keys of fe-live after a refused forget: %v, %v; want its 2", resp, err)
	}
	if _, err := runCLI(t, ep, "member forget"); err == nil || !strings.Contains(err.Error(), "takes one argument") {
		t.Errorf("member forget without a name: %v", err)
	}
}

// A configuration file given without --config to an operator command is
// refused with the fix, as run's is.
func TestOperatorCommandsHintConfig(t *testing.T) {
	for _, args := range [][]string{{"status", "run/sidecar.yaml"}, {"cursor", "get", "--catalog", "hive", "sidecar.yaml"}} {
		_, err := runApp(context.Background(), append([]string{"hmssync"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "did you mean --config "+args[len(args)-1]+"?") {
			t.Errorf("%q: %v; want the --config hint", args, err)
		}
	}
}
