package hmstest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
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
	want := []hms.Event{
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
