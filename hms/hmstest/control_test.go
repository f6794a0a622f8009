package hmstest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

func runtime_Gosched() { runtime.Gosched() }

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestControlAPI(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	h := httptest.NewServer(s.ControlHandler())
	defer h.Close()

	lines := `{"eventId":900,"eventTime":5,"eventType":"CREATE_DATABASE","dbName":"a","message":"{\"db\":\"a\"}","messageFormat":"json-0.2","catName":"hive"}
{"eventId":3,"eventTime":6,"eventType":"OPEN_TXN","message":"{}"}
`
	code, body := post(t, h.URL+"/events", lines)
	if code != 200 || !strings.Contains(body, `"first":1`) || !strings.Contains(body, `"last":2`) {
		t.Fatalf("POST /events: %d %s", code, body)
	}
	evs := s.Events()
	want := []message.Event{
		{ID: 1, Time: 5, Type: "CREATE_DATABASE", DB: "a", Message: `{"db":"a"}`, Format: "json-0.2", Catalog: "hive"},
		{ID: 2, Time: 6, Type: "OPEN_TXN", Message: `{}`},
	}
	if len(evs) != 2 || evs[0] != want[0] || evs[1] != want[1] {
		t.Fatalf("log after POST /events: %+v, want %+v", evs, want)
	}

	// A bad line appends nothing.
	code, body = post(t, h.URL+"/events", lines+"not json\n")
	if code != 400 || !strings.Contains(body, "line 3") || s.CurrentEventID() != 2 {
		t.Fatalf("POST /events with a bad line: %d %s, current id %d", code, body, s.CurrentEventID())
	}

	post(t, h.URL+"/events", lines+lines) // ids 3..6
	code, body = post(t, h.URL+"/clean?before=5", "")
	var st hmstest.State
	must(t, json.Unmarshal([]byte(body), &st))
	if code != 200 || st.CurrentEventID != 6 || st.OldestEventID != 5 || st.Events != 2 {
		t.Fatalf("POST /clean: %d %+v", code, st)
	}
	code, body = post(t, h.URL+"/reset?next=3", "")
	must(t, json.Unmarshal([]byte(body), &st))
	if code != 200 || st.CurrentEventID != 2 || st.OldestEventID != 0 || st.Events != 0 {
		t.Fatalf("POST /reset: %d %+v", code, st)
	}
	if code, body = post(t, h.URL+"/faults", `{"method":"get_next_notification","delay":"soon"}`); code != 400 {
		t.Fatalf("POST /faults with a bad delay: %d %s", code, body)
	}
	if code, body = post(t, h.URL+"/faults", `{"method":"get_next_notification","err":"boom","times":1}`); code != 200 {
		t.Fatalf("POST /faults: %d %s", code, body)
	}
	if code, body = post(t, h.URL+"/down", ""); code != 200 || !strings.Contains(body, `"up":false`) {
		t.Fatalf("POST /down: %d %s", code, body)
	}
	if code, body = post(t, h.URL+"/up", ""); code != 200 || !strings.Contains(body, `"up":true`) {
		t.Fatalf("POST /up: %d %s", code, body)
	}
}

// A repeat fault injected over HTTP reaches a real client: the metastore answers
// with duplicate ids, which the client drops while the batch stays contiguous.
func TestControlAPIRepeatFault(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	h := httptest.NewServer(s.ControlHandler())
	defer h.Close()
	for range 6 {
		s.Append(message.Event{Time: 1, Type: "OPEN_TXN", Message: "{}", Format: message.FormatJSON})
	}

	if code, body := post(t, h.URL+"/faults", `{"method":"get_next_notification","repeat":true,"times":1}`); code != 200 || !strings.Contains(body, `"repeat":true`) {
		t.Fatalf("POST /faults repeat: %d %s", code, body)
	}

	c, err := hms.NewClient(hms.ClientConfig{URIs: []string{s.URI()}})
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := c.NextEvents(ctx, 2, 3, nil)
	must(t, err)
	// The metastore sent 2, 3, 3, 4, 4, 5, 5: event 2 (not after the cursor) and
	// the three repeats are dropped.
	if got := eventIDs(f.Events); !reflect.DeepEqual(got, []int64{3, 4, 5}) || f.Dropped != 4 || f.Continuity != hms.Contiguous || f.Last != 5 {
		t.Fatalf("NextEvents(2, 3) under a repeat fault = %v dropped %d %v last %d; want [3 4 5], 4 dropped, contiguous, last 5", got, f.Dropped, f.Continuity, f.Last)
	}
	// times: 1 — the next fetch is clean again.
	f, err = c.NextEvents(ctx, 5, 10, nil)
	must(t, err)
	if got := eventIDs(f.Events); !reflect.DeepEqual(got, []int64{6}) || f.Dropped != 0 {
		t.Fatalf("NextEvents(5) after the repeat fault was used up = %v dropped %d; want [6], none dropped", got, f.Dropped)
	}
	// Only get_next_notification has ids to repeat.
	if code, body := post(t, h.URL+"/faults", `{"method":"get_current_notificationEventId","repeat":true}`); code != 400 || !strings.Contains(body, "get_next_notification") {
		t.Fatalf("POST /faults repeat on a method without ids: %d %s; want 400 naming get_next_notification", code, body)
	}
}

func eventIDs(evs []message.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestControlAPIMisreplyFault(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	h := httptest.NewServer(s.ControlHandler())
	defer h.Close()
	if code, body := post(t, h.URL+"/faults", `{"method":"get_current_notificationEventId","misreply":"garbled"}`); code != 400 || !strings.Contains(body, "sequence") {
		t.Fatalf("POST /faults with an unknown misreply: %d %s; want 400 listing the kinds", code, body)
	}
	if code, body := post(t, h.URL+"/faults", `{"method":"get_current_notificationEventId","misreply":"sequence","times":1}`); code != 200 {
		t.Fatalf("POST /faults misreply: %d %s", code, body)
	}
	c, err := hms.NewClient(hms.ClientConfig{URIs: []string{s.URI()}})
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CurrentEventID(ctx); err == nil || !strings.Contains(err.Error(), "sequence") {
		t.Fatalf("CurrentEventID under a sequence misreply: %v; want an out-of-order sequence error", err)
	}
}
