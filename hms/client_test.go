package hms_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

func newClient(t *testing.T, cfg hms.ClientConfig) *hms.Client {
	t.Helper()
	c, err := hms.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func appendN(s *hmstest.Server, n int, typ string) {
	evs := make([]message.Event, n)
	for i := range evs {
		evs[i] = message.Event{Time: 1, Type: typ, Message: "{}", Format: message.FormatJSON}
	}
	s.Append(evs...)
}

func ids(evs []message.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestNewClientValidates(t *testing.T) {
	for _, uris := range [][]string{nil, {"http://h:9083"}, {"thrift://h"}, {"h:9083"}} {
		if _, err := hms.NewClient(hms.ClientConfig{URIs: uris}); err == nil {
			t.Errorf("NewClient(%q): no error", uris)
		}
	}
}

func TestNextEventsContiguous(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	appendN(s, 5, "OPEN_TXN")
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	ctx := ctxT(t)
	cur, err := c.CurrentEventID(ctx)
	if err != nil || cur != 5 {
		t.Fatalf("CurrentEventID = %d, %v; want 5", cur, err)
	}
	f, err := c.NextEvents(ctx, 2, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(f.Events); f.Continuity != hms.Contiguous || len(got) != 2 || got[0] != 3 || got[1] != 4 || f.Last != 4 {
		t.Fatalf("NextEvents(2, 2) = %v %v last %d", got, f.Continuity, f.Last)
	}
	// Caught up: nothing new, the current id equals the cursor.
	f, err = c.NextEvents(ctx, 5, 10, nil)
	if err != nil || len(f.Events) != 0 || f.Continuity != hms.Contiguous || f.Current != 5 || f.Last != 5 {
		t.Fatalf("NextEvents(5) = %+v, %v", f, err)
	}
	oldest, ok, err := c.OldestEventID(ctx)
	if err != nil || !ok || oldest != 1 {
		t.Fatalf("OldestEventID = %d %v %v, want 1", oldest, ok, err)
	}
}

func TestNextEventsGap(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	appendN(s, 10, "OPEN_TXN")
	s.Clean(6)
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	f, err := c.NextEvents(ctxT(t), 3, 100, nil)
	if err != nil || f.Continuity != hms.Gap || ids(f.Events)[0] != 6 {
		t.Fatalf("NextEvents after cleaning = %v %v, %v; want a gap from 6", ids(f.Events), f.Continuity, err)
	}
	// From the oldest kept event on, the log is contiguous again.
	if f, err = c.NextEvents(ctxT(t), 5, 100, nil); err != nil || f.Continuity != hms.Contiguous {
		t.Fatalf("NextEvents(5) = %v, %v; want contiguous", f.Continuity, err)
	}
}

// A listener TTL can clean every event, leaving an empty log while the current
// id stays where it was: a consumer behind it has missed changes (Hive 4's
// cleaner empties an idle log).
func TestNextEventsGapWhenTheWholeLogWasCleaned(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	appendN(s, 10, "OPEN_TXN")
	s.Clean(11)
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	for _, skip := range [][]string{nil, {"OPEN_TXN"}} {
		f, err := c.NextEvents(ctxT(t), 4, 100, skip)
		if err != nil || f.Continuity != hms.Gap || len(f.Events) != 0 || f.Current != 10 {
			t.Fatalf("NextEvents(4, skip %v) on an emptied log = %+v, %v; want a gap, current 10", skip, f, err)
		}
	}
	// A consumer that had read everything lost nothing.
	if f, err := c.NextEvents(ctxT(t), 10, 100, nil); err != nil || f.Continuity != hms.Contiguous {
		t.Fatalf("NextEvents(10) on an emptied log = %+v, %v; want contiguous", f, err)
	}
}

func TestNextEventsSkipList(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	appendN(s, 3, "OPEN_TXN") // 1-3
	appendN(s, 2, "INSERT")   // 4-5
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	// Skipped events make ids jump without a gap.
	f, err := c.NextEvents(ctxT(t), 0, 100, []string{"OPEN_TXN"})
	if err != nil || f.Continuity != hms.Contiguous || len(f.Events) != 2 || f.Events[0].ID != 4 || f.Last != 5 {
		t.Fatalf("NextEvents with skip list = %v %v last %d, %v", ids(f.Events), f.Continuity, f.Last, err)
	}
	// With cleaning as well, the oldest kept event shows the gap.
	s.Clean(3)
	f, err = c.NextEvents(ctxT(t), 1, 100, []string{"OPEN_TXN"})
	if err != nil || f.Continuity != hms.Gap {
		t.Fatalf("NextEvents with skip list after cleaning = %v, %v; want gap", f.Continuity, err)
	}
	// Everything after the cursor skipped: the batch is empty but not a reset.
	appendN(s, 2, "OPEN_TXN") // 6-7
	f, err = c.NextEvents(ctxT(t), 5, 100, []string{"OPEN_TXN"})
	if err != nil || f.Continuity != hms.Contiguous || len(f.Events) != 0 || f.Current != 7 {
		t.Fatalf("NextEvents all skipped = %+v, %v", f, err)
	}
}

func TestNextEventsReset(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	appendN(s, 10, "OPEN_TXN")
	s.Reset(1)
	appendN(s, 3, "OPEN_TXN")
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	f, err := c.NextEvents(ctxT(t), 10, 100, nil)
	if err != nil || f.Continuity != hms.Reset || f.Current != 3 {
		t.Fatalf("NextEvents(10) after reset = %+v, %v; want reset at 3", f, err)
	}
}

func TestNextEventsDropsDuplicates(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	appendN(s, 6, "OPEN_TXN")
	s.InjectFault("get_next_notification", hmstest.Fault{Repeat: true, Times: 1})
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	f, err := c.NextEvents(ctxT(t), 2, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The server sent 2, 3, 3, 4, 4, 5, 5: event 2 and the repeats are dropped.
	if got := ids(f.Events); len(got) != 3 || got[0] != 3 || got[2] != 5 || f.Dropped != 4 || f.Continuity != hms.Contiguous {
		t.Fatalf("NextEvents with duplicates = %v dropped %d %v", got, f.Dropped, f.Continuity)
	}
}

func TestFailoverToAnswering(t *testing.T) {
	a, b := hmstest.NewServer(), hmstest.NewServer()
	defer a.Close()
	defer b.Close()
	appendN(a, 1, "OPEN_TXN")
	appendN(b, 2, "OPEN_TXN")
	a.Down()
	c := newClient(t, hms.ClientConfig{URIs: []string{a.URI(), b.URI()}, DialTimeout: time.Second})
	for range 3 { // whichever order the shuffle chose, b answers
		if cur, err := c.CurrentEventID(ctxT(t)); err != nil || cur != 2 {
			t.Fatalf("CurrentEventID with a down = %d, %v; want b's 2", cur, err)
		}
	}
	// b goes away and a comes back: the client reconnects to a.
	must(t, a.Up())
	b.Down()
	if cur, err := c.CurrentEventID(ctxT(t)); err != nil || cur != 1 {
		t.Fatalf("CurrentEventID after failover = %d, %v; want a's 1", cur, err)
	}
	// Both down: the error names both addresses.
	a.Down()
	_, err := c.CurrentEventID(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), a.Addr()) || !strings.Contains(err.Error(), b.Addr()) {
		t.Fatalf("CurrentEventID with all down: %v; want an error naming both", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReconnectAfterDroppedConnection(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	appendN(s, 4, "OPEN_TXN")
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	ctx := ctxT(t)
	if _, err := c.CurrentEventID(ctx); err != nil {
		t.Fatal(err)
	}
	// The server closes idle connections: the next call reconnects.
	s.DropConnections()
	if cur, err := c.CurrentEventID(ctx); err != nil || cur != 4 {
		t.Fatalf("after DropConnections: %d, %v", cur, err)
	}
	// The server drops the connection mid-call: the call is retried once.
	s.InjectFault("get_next_notification", hmstest.Fault{Drop: true, Times: 1})
	f, err := c.NextEvents(ctx, 0, 10, nil)
	if err != nil || len(f.Events) != 4 {
		t.Fatalf("NextEvents after a dropped call: %v, %v", ids(f.Events), err)
	}
	if n := s.Calls("get_next_notification"); n != 2 {
		t.Errorf("server saw %d get_next_notification calls, want 2 (dropped + retried)", n)
	}
	// A server that keeps dropping makes the call fail, not loop.
	s.InjectFault("get_current_notificationEventId", hmstest.Fault{Drop: true})
	if _, err := c.CurrentEventID(ctx); err == nil {
		t.Fatal("CurrentEventID against a server that always drops: no error")
	}
}

func TestServerErrorIsReturned(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	s.InjectFault("get_current_notificationEventId", hmstest.Fault{Err: "metastore database unavailable", Times: 1})
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	_, err := c.CurrentEventID(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "metastore database unavailable") || !strings.Contains(err.Error(), "get_current_notificationEventId") {
		t.Fatalf("error = %v; want the server's message and the method", err)
	}
	if _, err := c.CurrentEventID(ctxT(t)); err != nil {
		t.Fatalf("call after a server error: %v", err)
	}
}

func TestDeadlinesWhenServerStalls(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	s.InjectFault("get_next_notification", hmstest.Fault{Delay: time.Minute})
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.NextEvents(ctx, 0, 10, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NextEvents against a stalled server: %v; want the context's deadline", err)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Fatalf("NextEvents returned after %v, the server stalls for a minute", el)
	}
	// Without a context deadline, CallTimeout bounds the call.
	c2 := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, CallTimeout: 300 * time.Millisecond})
	if _, err := c2.NextEvents(context.Background(), 0, 10, nil); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("NextEvents with CallTimeout against a stalled server: %v", err)
	}
	// The stalled connection was dropped; once the server answers again so does the client.
	s.ClearFaults()
	if _, err := c.NextEvents(ctxT(t), 0, 10, nil); err != nil {
		t.Fatalf("NextEvents after the stall: %v", err)
	}
}

func TestFramedTransportAndUGI(t *testing.T) {
	s := hmstest.NewServer(hmstest.WithFramed())
	defer s.Close()
	appendN(s, 2, "OPEN_TXN")
	must(t, s.CreateDatabase("sales"))
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, Framed: true, UGIUser: "hive", UGIGroups: []string{"hadoop"}})
	ctx := ctxT(t)
	if cur, err := c.CurrentEventID(ctx); err != nil || cur != 3 {
		t.Fatalf("CurrentEventID over framed transport = %d, %v", cur, err)
	}
	dbs, err := c.Databases(ctx)
	if err != nil || len(dbs) != 1 || dbs[0] != "sales" {
		t.Fatalf("Databases = %v, %v", dbs, err)
	}
	must(t, c.Ping(ctx))
	if n := s.Calls("set_ugi"); n != 1 {
		t.Errorf("set_ugi called %d times, want once after connecting", n)
	}
}

// answeredBy calls CurrentEventID once and returns the index of the one server
// whose call counter moved; the counters, not the shuffle, tell which answered.
func answeredBy(t *testing.T, c *hms.Client, servers []*hmstest.Server) int {
	t.Helper()
	const method = "get_current_notificationEventId"
	before := make([]int, len(servers))
	for i, s := range servers {
		before[i] = s.Calls(method)
	}
	cur, err := c.CurrentEventID(ctxT(t))
	if err != nil {
		t.Fatalf("CurrentEventID: %v", err)
	}
	who := -1
	for i, s := range servers {
		if n := s.Calls(method) - before[i]; n == 1 && who < 0 {
			who = i
		} else if n != 0 {
			t.Fatalf("CurrentEventID: server %d saw %d calls; want exactly one server to see one", i, n)
		}
	}
	if who < 0 {
		t.Fatal("CurrentEventID answered but no server counted the call")
	}
	// Each server's log has a different length, so the answer names it too.
	if want := servers[who].CurrentEventID(); cur != want {
		t.Fatalf("CurrentEventID = %d, but server %d, which counted the call, is at %d", cur, who, want)
	}
	return who
}

// On reconnect the client promotes another metastore: it moves off the one whose
// connection broke, even when that one comes back or still accepts connections,
// and stays where it landed (Hive's client does the same, spreading load after
// a restart). The shuffle decides the order, so the test reads which server
// answered from their call counters; with three servers the order is a cycle,
// which makes every step predictable once the first two are known.
func TestReconnectPromotesAnotherMetastore(t *testing.T) {
	servers := make([]*hmstest.Server, 3)
	uris := make([]string, 3)
	for i := range servers {
		servers[i] = hmstest.NewServer()
		defer servers[i].Close()
		appendN(servers[i], i+1, "OPEN_TXN")
		uris[i] = servers[i].URI()
	}
	c := newClient(t, hms.ClientConfig{URIs: uris, DialTimeout: time.Second})

	// The client settles on the first that answers and keeps it.
	first := answeredBy(t, c, servers)
	for range 3 {
		if got := answeredBy(t, c, servers); got != first {
			t.Fatalf("call went to server %d; want the client to stay on server %d", got, first)
		}
	}

	// That metastore goes away: the client reconnects to another one...
	servers[first].Down()
	second := answeredBy(t, c, servers)
	if second == first {
		t.Fatalf("call after server %d went down answered by it", first)
	}
	// ...and stays there after the first one comes back.
	must(t, servers[first].Up())
	for range 3 {
		if got := answeredBy(t, c, servers); got != second {
			t.Fatalf("call after server %d came back went to server %d; want the client to stay on server %d", first, got, second)
		}
	}

	// The second drops its connections but keeps listening: the reconnect still
	// promotes the next metastore in the order, the third one, instead of
	// returning to the second, and the client stays there.
	third := 3 - first - second
	servers[second].DropConnections()
	for range 3 {
		if got := answeredBy(t, c, servers); got != third {
			t.Fatalf("call after server %d dropped its connections went to server %d; want the next in order, server %d", second, got, third)
		}
	}
}

// A metastore URI is logged on every connect: one with user information is
// refused, without repeating it.
func TestURIWithUserInfoIsRefused(t *testing.T) {
	_, err := hms.NewClient(hms.ClientConfig{URIs: []string{"thrift://hive:hunter2@127.0.0.1:9083"}})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "user information") {
		t.Fatalf("NewClient: %v; want the URI refused for its user information, redacted", err)
	}
}
