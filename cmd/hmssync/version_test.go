package main

import (
	"bytes"
	"runtime"
	"testing"
)

// TestVersionPrintsTheLinkedVersionAndCommit sets what -ldflags -X would and
// reads `hmssync version`.
func TestVersionPrintsTheLinkedVersionAndCommit(t *testing.T) {
	oldV, oldC := version, commit
	t.Cleanup(func() { version, commit = oldV, oldC })
	version, commit = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"

	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"hmssync", "version"}); err != nil {
		t.Fatal(err)
	}
	want := "hmssync v1.2.3\ncommit 0123456789abcdef0123456789abcdef01234567\ngo " + runtime.Version() + "\n"
	if out.String() != want {
		t.Errorf("got  %q\nwant %q", out.String(), want)
	}
	// --version and -v print the same.
	for _, flag := range []string{"--version", "-v"} {
		app := newApp()
		var out bytes.Buffer
		app.Writer = &out
		if err := app.Run([]string{"hmssync", flag}); err != nil {
			t.Fatalf("hmssync %s: %v", flag, err)
		}
		if out.String() != want {
			t.Errorf("hmssync %s: got %q\nwant %q", flag, out.String(), want)
		}
	}
}
