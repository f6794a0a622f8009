package message_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoNetworkPackage checks that decoding stays apart from the
// metastore client: no package the decoder depends on, directly or not, is
// Thrift, the generated metastore code, the client (package hms and its
// internal packages), or a network or TLS package. The fuzzers and the decode
// benchmarks then exercise the decoder alone, and a tool that only decodes
// (`hmssync events decode`) links no network code for it.
func TestImportsNoNetworkPackage(t *testing.T) {
	// go test puts its own go command first in the PATH of the tests it runs.
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the package's dependencies: %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	self := "github.com/hmssync/hmssync/hms/message"
	if len(deps) == 0 || deps[len(deps)-1] != self {
		t.Fatalf("go list -deps listed %q, which does not end with %s: the check says nothing", deps, self)
	}
	for _, dep := range deps {
		if forbidden(dep) {
			t.Errorf("%s depends on %s: decoding must need no Thrift, client or network package", self, dep)
		}
	}
}

func forbidden(path string) bool {
	under := func(prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }
	switch {
	case under("net"), under("crypto/tls"), under("crypto/x509"):
		return true
	case under("github.com/apache/thrift"):
		return true
	case path == "github.com/hmssync/hmssync/hms", under("github.com/hmssync/hmssync/hms/internal"):
		return true // the client, the generated Thrift code, the SASL transport
	case under("github.com/hmssync/hmssync/hms/hmstest"), under("github.com/hmssync/hmssync/hms/sasltest"):
		return true
	}
	return false
}

func TestForbiddenDependencies(t *testing.T) {
	for path, want := range map[string]bool{
		"net": true, "net/http": true, "crypto/tls": true, "crypto/x509": true,
		"github.com/apache/thrift/lib/go/thrift":                true,
		"github.com/hmssync/hmssync/hms":                        true,
		"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift": true,
		"github.com/hmssync/hmssync/hms/hmstest":                true,
		"netip":                                                 false, "crypto/sha256": false, "github.com/hmssync/hmssync/hms/message": false,
		"github.com/hmssync/hmssync/change": false, "github.com/klauspost/compress/gzip": false,
	} {
		if got := forbidden(path); got != want {
			t.Errorf("forbidden(%q) = %v, want %v", path, got, want)
		}
	}
}
