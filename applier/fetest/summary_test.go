package fetest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func getSummary(t *testing.T, s *Server) (Summary, string) {
	t.Helper()
	resp, err := http.Get(s.URL + "/_fetest/summary")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	var sum Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	return sum, string(raw)
}

// The summary has the numbers a process-level test polls for, and none of the
// history: its size does not grow with the requests the FE received.
func TestSummaryEndpoint(t *testing.T) {
	src := &truthSource{truth: Truth{"d": {"t": {"p=1"}, "u": nil}}}
	s := NewServer(Options{Loader: src.load})
	defer s.Close()
	mustOK(t, exec(t, s, "REFRESH CATALOG `hive`"), "refresh")
	batch := `{"from_event_id":1,"to_event_id":2,"full_refresh":false,"changes":[{"event_id":2,"op":"ADD_PARTITIONS","db":"d","table":"t","partitions":["p=2"],"update_time":5}]}`
	post(t, s.URL+"/api/hmssync/v1/catalogs/hive/changes", "root", "", nil, batch)

	sum, raw := getSummary(t, s)
	want := CatalogSummary{Initialised: true, AppliedEventID: 2, Databases: 1, Tables: 2, Partitions: 2}
	got := sum.Catalogs["hive"]
	got.RefreshedAt = want.RefreshedAt
	if got != want || sum.Catalogs["hive"].RefreshedAt.IsZero() {
		t.Errorf("catalog summary %+v, want %+v with a refresh time", sum.Catalogs["hive"], want)
	}
	if sum.Statements != 1 || sum.Changes != 1 || sum.FullRefreshes != 0 {
		t.Errorf("counts: %d statements, %d changes, %d full refreshes; want 1, 1, 0", sum.Statements, sum.Changes, sum.FullRefreshes)
	}
	if lc := sum.LastChange; lc == nil || *lc != (BatchSummary{Catalog: "hive", From: 1, To: 2, Changes: 1}) {
		t.Errorf("last change %+v", sum.LastChange)
	}
	for _, history := range []string{"REFRESH CATALOG", "p=2", "ADD_PARTITIONS"} {
		if strings.Contains(raw, history) {
			t.Errorf("the summary carries history or content (%q): %s", history, raw)
		}
	}
	size := len(raw)
	for range 50 {
		mustOK(t, exec(t, s, "REFRESH TABLE `hive`.`d`.`t`"), "refresh table")
	}
	// Only the statement counter's digits may grow.
	if _, raw := getSummary(t, s); len(raw) > size+2 {
		t.Errorf("the summary grew from %d to %d bytes with 50 more statements", size, len(raw))
	}
}

// Dropping the cache makes the FE forget a catalog as a restart would: its
// applied id is -1 again (native state), it is no longer initialised, and the
// request logs stay.
func TestDropCache(t *testing.T) {
	s := NewServer(Options{Loader: func(context.Context, string) (Truth, error) { return Truth{"d": {"t": {"p=1"}}}, nil }})
	defer s.Close()
	for _, cat := range []string{"hive", "other"} {
		post(t, s.URL+"/api/hmssync/v1/catalogs/"+cat+"/changes", "root", "", nil, `{"from_event_id":-1,"to_event_id":7,"full_refresh":true,"changes":[]}`)
	}
	resp, err := http.Post(s.URL+"/_fetest/drop-cache?catalog=hive", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /_fetest/drop-cache: %s", resp.Status)
	}
	if got := s.AppliedEventID("hive"); got != -1 {
		t.Errorf("applied id of hive after the drop: %d, want -1", got)
	}
	if got := s.AppliedEventID("other"); got != 7 {
		t.Errorf("applied id of other after dropping hive: %d, want 7 (untouched)", got)
	}
	a := getNative(t, s, "/api/hmssync/v1/catalogs/hive/state")
	if !strings.Contains(a, `"applied_event_id":-1`) {
		t.Errorf("native state after the drop: %s, want applied_event_id -1", a)
	}
	sum, _ := getSummary(t, s)
	if _, ok := sum.Catalogs["hive"]; ok {
		t.Errorf("hive still in the summary after the drop: %+v", sum.Catalogs["hive"])
	}
	if sum.Changes != 2 {
		t.Errorf("%d batches in the log after the drop, want the 2 received", sum.Changes)
	}
	// Without a catalog: every catalog.
	resp, err = http.Post(s.URL+"/_fetest/drop-cache", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := s.AppliedEventID("other"); got != -1 {
		t.Errorf("applied id of other after dropping every catalog: %d, want -1", got)
	}
}

func getNative(t *testing.T, s *Server, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	req.SetBasicAuth("root", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	out, _ := json.Marshal(v)
	return string(out)
}
