package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The hmssync binary links no test-only module: etcd's test framework and
// goleak are for tests (etcd's server is linked on purpose: it is the embedded
// etcd of `run --embedded-etcd`, `demo` and `dev etcd`).
func TestBinaryLinksNoTestOnlyModule(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	mods := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		mods[m] = true
	}
	if !mods["github.com/apache/thrift"] || !mods["go.etcd.io/etcd/server/v3"] {
		t.Fatalf("go list -deps names neither thrift nor etcd's server among %d modules: the check below says nothing", len(mods))
	}
	for _, testOnly := range []string{"go.etcd.io/etcd/tests/v3", "go.uber.org/goleak"} {
		if mods[testOnly] {
			t.Errorf("the hmssync binary links %s, a test-only module", testOnly)
		}
	}
}
