package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The exit status of `events decode` is 1 when an event failed.
func TestEventsDecodeExitsOneOnAFailedEvent(t *testing.T) {
	app := newApp()
	app.Reader = strings.NewReader(`{"eventId":9,"eventType":"CREATE_TABLE","message":"{"}` + "\n")
	app.Writer = &bytes.Buffer{}
	err := app.Run([]string{"hmssync", "events", "decode"})
	if code := exitCode(err); code != 1 {
		t.Fatalf("events decode with a bad event: exit %d (%v), want 1", code, err)
	}
}

func exitCode(err error) int {
	type coder interface{ ExitCode() int }
	if c, ok := err.(coder); ok {
		return c.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// `events tail` pointed at a web server's port, or at a port that accepts and
// never answers, fails within --connect-timeout, saying that it is not a Thrift
// metastore; --compact and --json exclude each other, and off a terminal the
// default is JSON lines.
func TestEventsTailRefusesANonThriftPort(t *testing.T) {
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer silent.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c // never answered
		}
	}()
	defer func() {
		silent.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	for _, c := range []struct{ name, uri, want string }{
		{"http", "thrift://" + web.Listener.Addr().String(), "not a Thrift metastore at thrift://" + web.Listener.Addr().String() + ": it answers HTTP"},
		{"silent", "thrift://" + silent.Addr().String(), "not a Thrift metastore at thrift://" + silent.Addr().String() + ", or one that does not answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, err := runArgs("events", "tail", "--hms", c.uri, "--connect-timeout", "1s")
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("events tail --hms %s: %v (output %q); want %q", c.uri, err, out, c.want)
			}
			if took > 3*time.Second {
				t.Fatalf("events tail --hms %s took %s; want it to fail within the 1s connect timeout (and a margin)", c.uri, took)
			}
		})
	}
	if _, err := runArgs("events", "tail", "--hms", "thrift://127.0.0.1:1", "--compact", "--json"); err == nil || !strings.Contains(err.Error(), "--compact and --json") {
		t.Fatalf("--compact --json: %v; want refused", err)
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Fatal("a buffer counts as a terminal: tail would print compact lines to a pipe")
	}
}
