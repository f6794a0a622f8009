package hmstest_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// The fetch log tells consumers apart by their set_ugi user and records what
// each fetch asked for and got.
func TestFetchLogNamesTheConsumer(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	for range 5 {
		s.Append(message.Event{Type: "CREATE_DATABASE", DB: "d", Message: "{}"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fetch := func(user string, after int64, max int) {
		t.Helper()
		c, err := hms.NewClient(hms.ClientConfig{URIs: []string{s.URI()}, UGIUser: user})
		must(t, err)
		defer c.Close()
		if _, err := c.NextEvents(ctx, after, max, nil); err != nil {
			t.Fatalf("%s: NextEvents(%d, %d): %v", user, after, max, err)
		}
	}
	fetch("before", 0, 5) // not recorded: the log is off
	s.RecordFetches()
	fetch("alice", 1, 2)
	fetch("bob", 3, 10)
	fetch("", 5, 10)
	// Events 2..3 for alice, 4..5 for bob (messages of 2 bytes), nothing after 5.
	want := []hmstest.ServedFetch{
		{User: "alice", After: 1, Max: 2, Events: 2, MessageBytes: 4, Highest: 3},
		{User: "bob", After: 3, Max: 10, Events: 2, MessageBytes: 4, Highest: 5},
		{User: "", After: 5, Max: 10, Events: 0, Highest: 5},
	}
	if got := s.Fetches(); !reflect.DeepEqual(got, want) {
		t.Errorf("fetch log\n got %+v\nwant %+v", got, want)
	}
}
