package agent

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// The README's command that changes the log level works as written (it once
// failed twice over: curl refused the URL without a host, and -d sent the JSON
// as a form, which the handler did not read). Only the port is the test's.
func TestReadmeLogLevelCommandWorks(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`(curl -X PUT [^`]*/log/level)`").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md documents no `curl -X PUT … /log/level` command")
	}
	lvl := zap.NewAtomicLevelAt(zap.InfoLevel)
	srv := httptest.NewServer(&LogLevel{Level: &lvl})
	defer srv.Close()
	cmd := strings.Replace(string(m[1]), "http://127.0.0.1:9108", srv.URL, 1)
	if cmd == string(m[1]) {
		t.Fatalf("the README's command %q does not name http://127.0.0.1:9108", m[1])
	}
	out, err := exec.Command("sh", "-c", strings.Replace(cmd, "curl", curl+" -sS --fail", 1)).CombinedOutput()
	if err != nil || lvl.Level() != zap.DebugLevel {
		t.Fatalf("%s: %v, %s; the level is %s, want debug", cmd, err, out, lvl.Level())
	}
}
