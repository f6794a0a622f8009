package hms_test

import (
	"strings"
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// A reply whose header does not match the call (another method, another
// sequence id, not a REPLY) is refused by the Thrift library before its body is
// read: the body is still on the connection, so the connection must go, or the
// next call would read it as its own reply.
func TestMismatchedReplyDropsTheConnection(t *testing.T) {
	for _, how := range []string{hmstest.MisreplyMethod, hmstest.MisreplySequence, hmstest.MisreplyType} {
		t.Run(how, func(t *testing.T) {
			s := hmstest.NewServer()
			defer s.Close()
			appendN(s, 4, "OPEN_TXN")
			// set_ugi is called once per connection: it counts them.
			c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, UGIUser: "hive"})
			ctx := ctxT(t)

			// Twice in a row (the retry on a new connection too): the call
			// fails and says which call it was.
			s.InjectFault("get_current_notificationEventId", hmstest.Fault{Misreply: how, Times: 2})
			if _, err := c.CurrentEventID(ctx); err == nil {
				t.Fatal("a mismatched reply was accepted")
			} else if !strings.Contains(err.Error(), "get_current_notificationEventId") {
				t.Errorf("error %q does not name the call", err)
			}
			cur, err := c.CurrentEventID(ctx)
			if err != nil || cur != 4 {
				t.Fatalf("the call after a mismatched reply: %d, %v; want 4 on a new connection", cur, err)
			}
			if n := s.Calls("set_ugi"); n != 3 {
				t.Errorf("%d connections, want 3: each one with an unread reply must be dropped", n)
			}

			// Once: the call is retried on a new connection, as for any broken
			// connection, and succeeds.
			s.InjectFault("get_next_notification", hmstest.Fault{Misreply: how, Times: 1})
			f, err := c.NextEvents(ctx, 0, 10, nil)
			if err != nil || len(f.Events) != 4 {
				t.Fatalf("NextEvents after a mismatched reply: %v, %v; want 4 events", ids(f.Events), err)
			}
			if n := s.Calls("set_ugi"); n != 4 {
				t.Errorf("%d connections, want 4", n)
			}
		})
	}
}
