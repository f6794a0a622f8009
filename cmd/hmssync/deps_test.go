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

// internal/ is split by floor, and production code keeps to it. The leaves
// (retry, names, redact, embedetcd, etcdcall) import nothing of the project; composition
// (config, sidecar, bench, demo, preflight, eventlines) is imported only by the
// CLI and by composition, so the sync driver and everything below it never reach
// up into it; the test-only helpers (internal/testutil/...) are imported by no
// production package, and so are not linked into the binary. Every package
// under internal/ belongs to one of the three floors, so a new one has to be
// placed in a list below.
func TestProductionPackagesKeepToTheFloorsOfInternal(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	const (
		mod      = "github.com/hmssync/hmssync/"
		internal = mod + "internal/"
		testutil = internal + "testutil"
	)
	floorOf := map[string]string{}
	for _, name := range []string{"config", "sidecar", "bench", "demo", "preflight", "eventlines"} {
		floorOf[internal+name] = "composition"
	}
	for _, name := range []string{"retry", "names", "redact", "embedetcd", "etcdcall"} {
		floorOf[internal+name] = "leaf"
	}
	under := func(pkg, dir string) bool {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	// floor says which floor of internal/ pkg is on, "" for a package outside
	// internal/ (the CLI, the driver and everything below it).
	floor := func(pkg string) string {
		if under(pkg, testutil) {
			return "test-only"
		}
		for root, f := range floorOf {
			if under(pkg, root) {
				return f
			}
		}
		if strings.HasPrefix(pkg, internal) {
			return "unplaced"
		}
		return ""
	}

	// Imports, without test files, of every package of the module.
	out, err := exec.Command(gobin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		seen[pkg] = true
		if floor(pkg) == "unplaced" {
			t.Errorf("%s is on no floor of internal/: list it as composition or leaf, or move it under internal/testutil", pkg)
		}
		for _, imp := range imports {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			switch {
			case floor(pkg) == "leaf":
				t.Errorf("%s is a leaf but imports %s: leaves import nothing of the project", pkg, imp)
			case floor(imp) == "test-only" && floor(pkg) != "test-only":
				t.Errorf("%s imports %s, a test-only helper", pkg, imp)
			case floor(imp) == "composition" && floor(pkg) != "composition" && pkg != mod+"cmd/hmssync":
				t.Errorf("%s imports %s: only the CLI and composition import composition", pkg, imp)
			}
		}
	}
	for pkg := range floorOf {
		if !seen[pkg] {
			t.Errorf("go list names no %s among %d packages: the floors above name a package that is not there", pkg, len(seen))
		}
	}
	for _, want := range []string{testutil + "/etcdtest", mod + "agent"} {
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
		if floor(p) == "test-only" {
			t.Errorf("the hmssync binary links %s, a test-only helper", p)
		}
	}
	if !linked[internal+"sidecar"] || !linked[internal+"retry"] {
		t.Fatalf("go list -deps names neither internal/sidecar nor internal/retry among %d packages: the check above says nothing", len(deps))
	}
}
