package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// statusOnly is a stand-in for the operating surface WithPprof wraps.
var statusOnly = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/status" {
		http.NotFound(w, r)
		return
	}
	_, _ = io.WriteString(w, "status\n")
})

// get sends GET path as if from remote (host:port) and returns the answer.
func get(h http.Handler, path, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestPprofIsOffByDefault(t *testing.T) {
	t.Parallel()
	for _, access := range []PprofAccess{"", PprofOff, "yes"} {
		h := WithPprof(statusOnly, access)
		if w := get(h, "/debug/pprof/", "127.0.0.1:4000"); w.Code != http.StatusNotFound {
			t.Errorf("http.pprof %q: /debug/pprof/ from loopback answered %d; want 404 (off)", access, w.Code)
		}
		if w := get(h, "/status", "127.0.0.1:4000"); w.Code != http.StatusOK {
			t.Errorf("http.pprof %q: /status answered %d; want 200", access, w.Code)
		}
	}
}

func TestPprofLoopbackRefusesOtherClients(t *testing.T) {
	t.Parallel()
	h := WithPprof(statusOnly, PprofLoopback)
	for _, remote := range []string{"10.1.2.3:4000", "[2001:db8::1]:4000", "192.168.0.7:1", "not-an-address"} {
		w := get(h, "/debug/pprof/goroutine?debug=1", remote)
		if w.Code != http.StatusForbidden {
			t.Errorf("from %s: answered %d; want 403", remote, w.Code)
		}
		if strings.Contains(w.Body.String(), "goroutine") && strings.Contains(w.Body.String(), "runtime.") {
			t.Errorf("from %s: a goroutine profile was served:\n%s", remote, w.Body.String())
		}
	}
	// A forwarded-for header names no connection: it must not open the door.
	r := httptest.NewRequest(http.MethodGet, "/debug/pprof/cmdline", nil)
	r.RemoteAddr = "10.1.2.3:4000"
	r.Header.Set("X-Forwarded-For", "127.0.0.1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("remote client claiming X-Forwarded-For 127.0.0.1: answered %d; want 403", w.Code)
	}
	for _, remote := range []string{"127.0.0.1:4000", "[::1]:4000", "127.8.9.10:1"} {
		if w := get(h, "/debug/pprof/goroutine?debug=1", remote); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "goroutine") {
			t.Errorf("from loopback %s: answered %d %q; want 200 and a goroutine profile", remote, w.Code, firstLine(w.Body.String()))
		}
	}
	if w := get(h, "/status", "10.1.2.3:4000"); w.Code != http.StatusOK {
		t.Errorf("/status from a remote client answered %d; want 200 (only pprof is loopback-only)", w.Code)
	}
}

func TestPprofAnyServesRemoteClients(t *testing.T) {
	t.Parallel()
	h := WithPprof(statusOnly, PprofAny)
	if w := get(h, "/debug/pprof/goroutine?debug=1", "10.1.2.3:4000"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "goroutine") {
		t.Fatalf("http.pprof any, remote client: answered %d %q; want 200 and a goroutine profile", w.Code, firstLine(w.Body.String()))
	}
}

// Over a real connection on the loopback interface, as an operator on the
// host would ask.
func TestPprofServesALoopbackConnection(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(WithPprof(statusOnly, PprofLoopback))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("GET /debug/pprof/heap over loopback: %d %q; want 200 and a heap profile", resp.StatusCode, firstLine(string(body)))
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
