package eventlines

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/testutil"
)

// TestEventsDecodeRealCorpus runs `events decode` over the whole real corpus. The
// expected lines are written by hand from reference §4–§5 (SPEC §3 JSON form).
func TestEventsDecodeRealCorpus(t *testing.T) {
	in, err := os.Open("../../hms/message/testdata/real.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	failed, err := Decode(in, &out, "hive")
	if err != nil || failed != 0 {
		t.Fatalf("Decode: %d failed, %v", failed, err)
	}
	want := `{"event_id":101,"op":"REGISTER_TABLE","db":"tmp_db","table":"notification_test","update_time":1616068620}
{"event_id":102,"op":"ADD_PARTITIONS","db":"tmp_db","table":"notification_test","partitions":["day=2021-03-18"],"update_time":1616070330}
{"event_id":103,"op":"REFRESH_TABLE","db":"tmp_db","table":"notification_test","update_time":1616070641}
{"event_id":104,"op":"DROP_PARTITIONS","db":"tmp_db","table":"notification_test","partitions":["day=2021-03-17"],"update_time":1616071104}
{"event_id":105,"op":"REFRESH_PARTITIONS","db":"tmp_db","table":"notification_test","partitions":["day=2021-03-18"],"update_time":1616071558}
{"event_id":106,"op":"UNREGISTER_TABLE","db":"tmp_db","table":"notification_test","update_time":1616071666}
{"event_id":107,"op":"REFRESH_PARTITIONS","db":"fin_ads_online","table":"ads_p_u_behavior_record_ice_statistics_pdi","partitions":["pday=20230131"],"update_time":1678434745}
`
	if out.String() != want {
		t.Errorf("events decode output:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestEventsDecodeContinuesAfterErrors(t *testing.T) {
	in := strings.NewReader(`{"eventId":1,"eventTime":10,"eventType":"CREATE_DATABASE","message":"{\"db\":\"a\"","messageFormat":"json-0.2"}
not json at all

{"eventId":3,"eventTime":30,"eventType":"CREATE_DATABASE","message":"{\"db\":\"c\"}","messageFormat":"json-0.2"}
{"eventId":4,"eventTime":40,"eventType":"CREATE_DATABASE","message":"{\"db\":\"d\"}","catName":"spark"}
`)
	var out bytes.Buffer
	failed, err := Decode(in, &out, "hive")
	if err != nil || failed != 2 {
		t.Fatalf("Decode: %d failed, %v; want 2 failures", failed, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 ||
		!strings.HasPrefix(lines[0], `{"event_id":1,"error":"event 1 (CREATE_DATABASE): malformed message JSON`) ||
		!strings.HasPrefix(lines[1], `{"event_id":0,"error":"input line 2 is not a NotificationEvent`) ||
		lines[2] != `{"event_id":3,"op":"REGISTER_DATABASE","db":"c","update_time":30}` {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestEventsTail(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := hmstest.NewServer()
	defer s.Close()
	if err := s.CreateDatabase("old"); err != nil {
		t.Fatal(err)
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
		done <- Tail(ctx, client, &out, &bytes.Buffer{}, TailOptions{From: 1, Batch: 2, Poll: 10 * time.Millisecond, Decode: true})
	}()
	for _, db := range []string{"a", "b", "c"} {
		if err := s.CreateDatabase(db); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"op":"REGISTER_DATABASE","db":"c"`) {
		if time.Now().After(deadline) {
			t.Fatalf("tail output after 10s:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond) // polling the output for a condition
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Contains(got, `"db":"old"`) || strings.Count(got, `"eventType":"CREATE_DATABASE"`) != 3 || strings.Count(got, `"op":"REGISTER_DATABASE"`) != 3 {
		t.Fatalf("tail --from 1 --decode printed:\n%s\nwant events 2-4 each with its descriptor", got)
	}
}

// A metastore whose cleaner emptied the log behind the cursor answers with a gap
// and no events: tail reports it and follows from the current id, without
// indexing the empty batch.
func TestEventsTailGapOnAnEmptiedLog(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := hmstest.NewServer()
	defer s.Close()
	for _, db := range []string{"a", "b", "c"} {
		if err := s.CreateDatabase(db); err != nil {
			t.Fatal(err)
		}
	}
	s.Clean(s.CurrentEventID() + 1)
	client, err := hms.NewClient(hms.ClientConfig{URIs: []string{s.URI()}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Tail(ctx, client, &out, &errOut, TailOptions{From: 1, Batch: 10, Poll: 10 * time.Millisecond, Decode: true})
	}()
	testutil.Await(t, 10*time.Second, "tail to report the gap", func() (bool, string) {
		return strings.Contains(errOut.String(), "gap"), errOut.String()
	})
	if err := s.CreateDatabase("d"); err != nil {
		t.Fatal(err)
	}
	testutil.Await(t, 10*time.Second, "tail to print the event after the gap", func() (bool, string) {
		return strings.Contains(out.String(), `"db":"d"`), out.String()
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(errOut.String(), "gap"); n != 1 {
		t.Errorf("tail reported %d gaps, want 1:\n%s", n, errOut.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
