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

// internal/ is split by floor, and production code keeps to it: the leaves
// directly under internal/ (retry, names, redact) import nothing of the
// project; composition (internal/app/...) is imported only by the CLI and by
// composition, so the sync driver and everything below it never reach up into
// it; the test-only helpers (internal/testutil/...) are imported by no
// production package, and so are not linked into the binary.
func TestProductionPackagesKeepToTheFloorsOfInternal(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	const (
		mod      = "github.com/hmssync/hmssync/"
		app      = mod + "internal/app/"
		testutil = mod + "internal/testutil"
	)
	// Imports, without test files, of every package of the module.
	out, err := exec.Command(gobin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	under := func(pkg, floor string) bool {
		return pkg == strings.TrimSuffix(floor, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(floor, "/")+"/")
	}
	isLeaf := func(pkg string) bool {
		rest, ok := strings.CutPrefix(pkg, mod+"internal/")
		return ok && !under(pkg, app) && !under(pkg, testutil) && !strings.Contains(rest, "/")
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		seen[pkg] = true
		for _, imp := range imports {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			switch {
			case isLeaf(pkg):
				t.Errorf("%s is a leaf but imports %s: leaves import nothing of the project", pkg, imp)
			case under(imp, testutil) && !under(pkg, testutil):
				t.Errorf("%s imports %s, a test-only helper", pkg, imp)
			case under(imp, app) && !under(pkg, app) && pkg != mod+"cmd/hmssync":
				t.Errorf("%s imports %s: only the CLI and composition import composition", pkg, imp)
			}
		}
	}
	for _, want := range []string{mod + "internal/retry", app + "sidecar", testutil + "/etcdtest", mod + "agent"} {
		if !seen[want] {
			t.Fatalf("go list names no %s among %d packages: the check above says nothing", want, len(seen))
		}
	}

	// The binary itself, through all its dependencies.
	out, err = exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	linked := map[string]bool{}
	for _, p := range deps {
		linked[p] = true
		if under(p, testutil) {
			t.Errorf("the hmssync binary links %s, a test-only helper", p)
		}
	}
	if !linked[app+"sidecar"] || !linked[mod+"internal/retry"] {
		t.Fatalf("go list -deps names neither internal/app/sidecar nor internal/retry among %d packages: the check above says nothing", len(deps))
	}
}
