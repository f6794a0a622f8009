package agent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func putLevel(h http.Handler, remote, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPut, "/log/level", strings.NewReader(body))
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestLogLevelChangesOnlyToSafeLevelsFromLoopback(t *testing.T) {
	t.Parallel()
	lvl := zap.NewAtomicLevelAt(zap.InfoLevel)
	h := &LogLevel{Level: &lvl}
	cases := []struct {
		name, remote, body string
		code               int
		after              string
	}{
		{"JSON from loopback", "127.0.0.1:4000", `{"level":"debug"}`, 200, "debug"},
		{"JSON from IPv6 loopback", "[::1]:4000", `{"level":"warn"}`, 200, "warn"},
		{"a form from loopback", "127.0.0.1:4000", `level=error`, 200, "error"},
		{"from the pod's address", "10.1.2.3:4000", `{"level":"debug"}`, 403, "error"},
		{"fatal silences every error log", "127.0.0.1:4000", `{"level":"fatal"}`, 400, "error"},
		{"panic", "127.0.0.1:4000", `{"level":"panic"}`, 400, "error"},
		{"dpanic", "127.0.0.1:4000", `{"level":"dpanic"}`, 400, "error"},
		{"a huge body", "127.0.0.1:4000", `{"level":"debug","x":"` + strings.Repeat("x", 2<<20) + `"}`, 400, "error"},
	}
	for _, c := range cases {
		w := putLevel(h, c.remote, c.body)
		if w.Code != c.code || lvl.Level().String() != c.after {
			t.Errorf("%s: status %d, level %s; want %d, %s (body %q)", c.name, w.Code, lvl.Level(), c.code, c.after, shorten(w.Body.String(), 200))
		}
		if w.Body.Len() > 1024 {
			t.Errorf("%s: %d-byte answer; the body must not be echoed", c.name, w.Body.Len())
		}
	}
	remote := &LogLevel{Level: &lvl, AllowRemote: true}
	if w := putLevel(remote, "10.1.2.3:4000", `{"level":"info"}`); w.Code != 200 || lvl.Level() != zap.InfoLevel {
		t.Errorf("with AllowRemote, a remote PUT: %d, level %s; want 200, info", w.Code, lvl.Level())
	}
	r := httptest.NewRequest(http.MethodGet, "/log/level", nil)
	r.RemoteAddr = "10.1.2.3:4000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"level":"info"}` {
		t.Errorf("GET from anywhere: %d %q; want 200 {\"level\":\"info\"}", w.Code, w.Body.String())
	}
}

// A client sending its body one byte a second must not hold a connection for as
// long as it likes: the server has read, write and idle timeouts.
func TestHTTPServerCutsASlowBody(t *testing.T) {
	t.Parallel()
	srv := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	if srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.ReadHeaderTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Fatalf("server bounds: read %v, write %v, idle %v, header %v, %d header bytes; want all set",
			srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.ReadHeaderTimeout, srv.MaxHeaderBytes)
	}
	srv.ReadTimeout = 300 * time.Millisecond // the production bound, shortened for the test
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PUT /log/level HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	closed := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(c).ReadByte()
		closed <- err
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("the connection was closed only after %v", d)
			}
			return
		case <-tick.C:
			if _, err := c.Write([]byte("x")); err != nil {
				return // closed by the server
			}
		}
	}
}
