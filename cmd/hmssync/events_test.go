package main

import (
	"bytes"
	"strings"
	"testing"
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
