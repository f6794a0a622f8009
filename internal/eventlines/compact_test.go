package eventlines

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/testutil"
)

// A compact line names the id, the time in UTC, the type, db.table (or the
// database, or "-") and the message's size.
func TestWriteCompact(t *testing.T) {
	for _, c := range []struct {
		ev   message.Event
		want string
	}{
		{message.Event{ID: 48213, Time: 1733346871, Type: "ADD_PARTITION", DB: "sales", Table: "orders", Message: strings.Repeat("x", 1229)},
			"48213 2024-12-04T21:14:31Z ADD_PARTITION sales.orders 1.2KiB\n"},
		{message.Event{ID: 7, Time: 0, Type: "CREATE_DATABASE", DB: "sales", Message: "{}"}, "7 1970-01-01T00:00:00Z CREATE_DATABASE sales 2B\n"},
		{message.Event{ID: 8, Time: 60, Type: "OPEN_TXN", Message: strings.Repeat("x", 3<<20)}, "8 1970-01-01T00:01:00Z OPEN_TXN - 3.0MiB\n"},
		// Names from a hostile metastore cannot end the line or reach the terminal.
		{message.Event{ID: 9, Time: 0, Type: "ALTER_TABLE\x1b[2J", DB: "db", Table: "t\n10 1970-01-01T00:00:00Z DROP_TABLE db.t", Message: "{}"},
			"9 1970-01-01T00:00:00Z \"ALTER_TABLE\\x1b[2J\" \"db.t\\n10 1970-01-01T00:00:00Z DROP_TABLE db.t\" 2B\n"},
		{message.Event{ID: 10, Time: 0, Type: "OPEN_TXN", DB: "null", Table: " ", Message: "{}"}, "10 1970-01-01T00:00:00Z OPEN_TXN \"null. \" 2B\n"},
		{message.Event{ID: 11, Time: 0, Type: "ALTER_TABLE", DB: "db", Table: "a\x9b31mb", Message: "{}"}, "11 1970-01-01T00:00:00Z ALTER_TABLE \"db.a\\x9b31mb\" 2B\n"},
	} {
		var b bytes.Buffer
		if err := WriteCompact(&b, c.ev); err != nil || b.String() != c.want {
			t.Errorf("WriteCompact(%d) = %q, %v; want %q", c.ev.ID, b.String(), err, c.want)
		}
	}
}

// Tail with Compact prints one compact line per event and no JSON.
func TestTailCompact(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := hmstest.NewServer()
	defer s.Close()
	for _, db := range []string{"a", "b"} {
		if err := s.CreateDatabase(db); err != nil {
			t.Fatal(err)
		}
	}
	client, err := hms.NewClient(hms.ClientConfig{URIs: []string{s.URI()}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error)
	go func() {
		done <- Tail(ctx, client, &out, &bytes.Buffer{}, TailOptions{From: 0, Batch: 10, Poll: 10 * time.Millisecond, Compact: true})
	}()
	testutil.Await(t, 10*time.Second, "two lines", func() (bool, string) {
		return strings.Count(out.String(), "\n") >= 2, out.String()
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "1 ") || !strings.Contains(lines[0], " CREATE_DATABASE a ") ||
		!strings.HasPrefix(lines[1], "2 ") || !strings.Contains(lines[1], " CREATE_DATABASE b ") || strings.Contains(out.String(), "{") {
		t.Fatalf("compact tail printed:\n%s\nwant two short lines, events 1 and 2", out.String())
	}
}
