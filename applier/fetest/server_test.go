package fetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// truthSource is a mutable metastore truth for the Loader.
type truthSource struct {
	mu    sync.Mutex
	truth Truth
}

func (ts *truthSource) set(t Truth) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.truth = t
}

func (ts *truthSource) load(_ context.Context, catalog string) (Truth, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if catalog != "hive" {
		return nil, ErrUnknownCatalog
	}
	out := Truth{}
	for db, tables := range ts.truth {
		out[db] = map[string][]string{}
		for t, p := range tables {
			out[db][t] = append([]string(nil), p...)
		}
	}
	return out, nil
}

type answer struct {
	HTTPStatus int
	Code       int             `json:"code"`
	Msg        string          `json:"msg"`
	Data       json.RawMessage `json:"data"`
	Raw        string
}

func (a answer) text() string {
	var s string
	if json.Unmarshal(a.Data, &s) == nil {
		return s
	}
	return string(a.Data)
}

// testClient opens a connection per request, so that a test that takes an
// endpoint down and up never trips over a pooled connection the server closed.
var testClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func post(t *testing.T, url, user, pass string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{HTTPStatus: resp.StatusCode, Raw: string(raw)}
	_ = json.Unmarshal(raw, &a)
	return a
}

var streamOff = map[string]string{"X-Doris-Stream": "false", "Content-Type": "application/json"}

func stmtBody(s string) string {
	b, _ := json.Marshal(map[string]string{"stmt": s})
	return string(b)
}

func exec(t *testing.T, s *Server, stmt string) answer {
	t.Helper()
	return post(t, s.URL+"/api/query/default_cluster/information_schema", "root", "", streamOff, stmtBody(stmt))
}

func mustOK(t *testing.T, a answer, what string) {
	t.Helper()
	if a.HTTPStatus != 200 || a.Code != 0 {
		t.Fatalf("%s: got HTTP %d code %d %s", what, a.HTTPStatus, a.Code, a.Raw)
	}
}

func wantSnapshot(t *testing.T, s *Server, want Truth) {
	t.Helper()
	if d := Diff(want, s.Snapshot("hive")); d != "" {
		t.Fatalf("cache differs from what it should hold: %s", d)
	}
}

func TestRefreshStatementsFollowTheLoader(t *testing.T) {
	src := &truthSource{truth: Truth{"d": {"t": {"p=1", "p=2"}, "u": {}}}}
	s := NewServer(Options{Loader: src.load})
	defer s.Close()

	if got := s.Snapshot("hive"); got != nil {
		t.Fatalf("a catalog never touched should not be loaded, got %v", got)
	}
	mustOK(t, exec(t, s, "REFRESH CATALOG `hive`"), "refresh catalog")
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1", "p=2"}, "u": nil}})

	// The metastore moves on; nothing is refreshed: the cache stays stale.
	src.set(Truth{"d": {"t": {"p=1", "p=2", "p=3"}, "v": {"x=1"}}})
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1", "p=2"}, "u": nil}})

	// A name-list refresh drops u, loads the new v, and keeps t's partitions.
	mustOK(t, exec(t, s, "REFRESH DATABASE `hive`.`d` PROPERTIES(\"invalid_cache\"=\"false\")"), "refresh database")
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1", "p=2"}, "v": {"x=1"}}})

	mustOK(t, exec(t, s, "REFRESH TABLE `hive`.`d`.`t`"), "refresh table")
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1", "p=2", "p=3"}, "v": {"x=1"}}})

	// A new database and new partitions: invalid_cache=false at catalog level
	// loads e but keeps t's partitions; the default reloads everything.
	src.set(Truth{"d": {"t": {"p=4"}, "v": {"x=1"}}, "e": {"w": {"k=1"}}})
	mustOK(t, exec(t, s, "REFRESH CATALOG `hive` PROPERTIES(\"invalid_cache\"=\"false\")"), "refresh catalog names")
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1", "p=2", "p=3"}, "v": {"x=1"}}, "e": {"w": {"k=1"}}})
	mustOK(t, exec(t, s, "REFRESH DATABASE `hive`.`d`"), "refresh database, invalidating")
	wantSnapshot(t, s, Truth{"d": {"t": {"p=4"}, "v": {"x=1"}}, "e": {"w": {"k=1"}}})

	for _, stmt := range []string{"REFRESH TABLE `hive`.`d`.`gone`", "REFRESH TABLE `hive`.`nodb`.`t`", "REFRESH DATABASE `hive`.`nodb`"} {
		a := exec(t, s, stmt)
		if a.Code != 1 || !strings.Contains(a.text(), "does not exist") {
			t.Errorf("%s: want code 1 \"does not exist\", got %s", stmt, a.Raw)
		}
	}
	a := exec(t, s, "REFRESH CATALOG `nocat`")
	if a.Code != 1 || !strings.Contains(a.text(), "Unknown catalog") {
		t.Errorf("unknown catalog: got %s", a.Raw)
	}
	// Unqualified names address the internal catalog: an error, but not
	// "does not exist", which a client would take for success.
	a = exec(t, s, "REFRESH TABLE `d`.`t`")
	if a.Code != 1 || strings.Contains(a.text(), "does not exist") {
		t.Errorf("unqualified table: got %s", a.Raw)
	}
}

func TestQueryEndpointSpeaksDorisEnvelope(t *testing.T) {
	s := NewServer(Options{Password: "secret"})
	defer s.Close()
	url := s.URL + "/api/query/default_cluster/information_schema"

	a := post(t, url, "root", "wrong", streamOff, stmtBody("SELECT 1"))
	if a.HTTPStatus != 200 || a.Code != 401 {
		t.Errorf("wrong password: want HTTP 200 code 401, got %d %s", a.HTTPStatus, a.Raw)
	}
	a = post(t, url, "root", "secret", map[string]string{"Content-Type": "application/json"}, stmtBody("SELECT 1"))
	if json.Valid([]byte(a.Raw)) {
		t.Errorf("without X-Doris-Stream: false the answer should not be an envelope, got %s", a.Raw)
	}
	a = post(t, url, "root", "secret", streamOff, `{"sql":"SELECT 1"}`)
	if a.Code != 403 {
		t.Errorf("body without stmt: want code 403, got %s", a.Raw)
	}
	a = post(t, url, "root", "secret", streamOff, stmtBody("DROP DATABASE x"))
	if a.Code != 1 || a.Msg != "Error" {
		t.Errorf("unsupported statement: want code 1, got %s", a.Raw)
	}
	a = post(t, url, "root", "secret", streamOff, stmtBody("SELECT 1"))
	var data struct {
		Type string `json:"type"`
	}
	if a.Code != 0 || json.Unmarshal(a.Data, &data) != nil || data.Type != "result_set" {
		t.Errorf("SELECT 1: want code 0 and a result_set, got %s", a.Raw)
	}
	a = post(t, url, "root", "secret", streamOff, stmtBody("REFRESH CATALOG `hive`"))
	if a.Code != 0 || json.Unmarshal(a.Data, &data) != nil || data.Type != "exec_status" {
		t.Errorf("REFRESH: want code 0 and exec_status, got %s", a.Raw)
	}
	want := []string{"DROP DATABASE x", "SELECT 1", "REFRESH CATALOG `hive`"}
	if got := s.Statements(); !reflect.DeepEqual(got, want) {
		t.Errorf("statements: got %q, want %q (authenticated statements only, in order)", got, want)
	}
}

func TestFaultsInProcess(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()

	s.InjectFault(Fault{Match: "`a`", Code: 500, Times: 2})
	s.InjectFault(Fault{HTTPStatus: 503, Match: "`b`"})
	s.InjectFault(Fault{NotExist: true, Match: "`c`"})
	s.InjectFault(Fault{Code: 401, Match: "`e`", Times: 1})

	for i := 0; i < 2; i++ {
		if a := exec(t, s, "REFRESH CATALOG `a`"); a.Code != 500 {
			t.Errorf("try %d: want injected code 500, got %s", i, a.Raw)
		}
	}
	mustOK(t, exec(t, s, "REFRESH CATALOG `a`"), "a fault with Times 2 is used up after two requests")
	if a := exec(t, s, "REFRESH CATALOG `b`"); a.HTTPStatus != 503 {
		t.Errorf("want HTTP 503, got %d", a.HTTPStatus)
	}
	if a := exec(t, s, "REFRESH TABLE `c`.`d`.`t`"); a.Code != 1 || !strings.Contains(a.text(), "Table [t] does not exist") {
		t.Errorf("want does not exist, got %s", a.Raw)
	}
	if a := exec(t, s, "REFRESH TABLE `e`.`d`.`t`"); a.Code != 401 {
		t.Errorf("want code 401, got %s", a.Raw)
	}
	s.ClearFaults()
	mustOK(t, exec(t, s, "REFRESH CATALOG `b`"), "after ClearFaults")

	s.InjectFault(Fault{Delay: 150 * time.Millisecond, Times: 1})
	start := time.Now()
	mustOK(t, exec(t, s, "REFRESH CATALOG `x`"), "a delay-only fault answers normally")
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("delay fault: answered after %v", el)
	}

	s.Down()
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // no pooled connection
	_, err := fresh.Post(s.URL+"/api/query/default_cluster/information_schema", "application/json", strings.NewReader(stmtBody("SELECT 1")))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("while down: want connection refused, got %v", err)
	}
	if err := s.Up(); err != nil {
		t.Fatal(err)
	}
	mustOK(t, exec(t, s, "SELECT 1"), "after Up")
}

func TestFaultsOverHTTP(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	ctl := func(method, body string) answer {
		req, _ := http.NewRequest(method, s.URL+"/_fetest/faults", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return answer{HTTPStatus: resp.StatusCode, Raw: string(raw)}
	}
	if a := ctl("POST", `{"code":1,"message":"boom","times":1,"delai":"1s"}`); a.HTTPStatus != 400 {
		t.Errorf("a misspelt key must be rejected, got %d %s", a.HTTPStatus, a.Raw)
	}
	if a := ctl("POST", `[{"code":1,"message":"boom","times":1},{"http_status":502,"match":"`+"`z`"+`","delay":"10ms"}]`); a.HTTPStatus != 200 {
		t.Fatalf("add faults: %d %s", a.HTTPStatus, a.Raw)
	}
	if a := exec(t, s, "REFRESH CATALOG `y`"); a.Code != 1 || a.text() != "boom" {
		t.Errorf("want code 1 boom, got %s", a.Raw)
	}
	if a := exec(t, s, "REFRESH CATALOG `z`"); a.HTTPStatus != 502 {
		t.Errorf("want HTTP 502, got %d", a.HTTPStatus)
	}
	ctl("DELETE", "")
	mustOK(t, exec(t, s, "REFRESH CATALOG `z`"), "after DELETE /_fetest/faults")

	if a := ctl("POST", `{"refuse":"300ms"}`); a.HTTPStatus != 200 {
		t.Fatalf("refuse: %d %s", a.HTTPStatus, a.Raw)
	}
	// The endpoint goes down after answering, then comes back.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	sawRefused := false
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := fresh.Get(s.URL + "/_fetest/state")
		if errors.Is(err, syscall.ECONNREFUSED) {
			sawRefused = true
		} else if err == nil {
			resp.Body.Close()
			if sawRefused {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !sawRefused {
		t.Fatal("refuse: never saw connection refused")
	}
	mustOK(t, exec(t, s, "SELECT 1"), "after the refusal ended")
}

func TestOverlapDetector(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	s.InjectFault(Fault{Match: "`slow`", Delay: 5 * time.Second, Times: 1})
	done := make(chan error)
	go func() {
		// Not exec: t.Fatal must not be called off the test goroutine, and
		// this request ends in an error when Close drops it.
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/query/default_cluster/information_schema", strings.NewReader(stmtBody("REFRESH CATALOG `slow`")))
		req.SetBasicAuth("root", "")
		req.Header.Set("X-Doris-Stream", "false")
		resp, err := testClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// Wait until the slow statement is being answered, then send another.
	waitFor(t, func() bool { return len(s.Statements()) == 1 })
	mustOK(t, exec(t, s, "REFRESH CATALOG `fast`"), "second statement")
	if got := s.Overlaps(); got != 1 {
		t.Errorf("overlaps: got %d, want 1", got)
	}
	s.ClearFaults()
	s.Close() // ends the slow answer's delay
	<-done
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestClusterSharesOneModel(t *testing.T) {
	src := &truthSource{truth: Truth{"d": {"t": {"p=1"}}}}
	c := NewCluster(3, Options{Loader: src.load})
	defer c.Close()
	if len(c.URLs()) != 3 || c.URLs()[0] == c.URLs()[1] {
		t.Fatalf("want 3 distinct endpoints, got %v", c.URLs())
	}
	mustOK(t, exec(t, c.Server(1), "REFRESH CATALOG `hive`"), "refresh via FE 1")
	src.set(Truth{"d": {"t": {"p=1", "p=2"}}})
	mustOK(t, exec(t, c.Server(2), "REFRESH TABLE `hive`.`d`.`t`"), "refresh via FE 2")
	for i := range 3 {
		if d := Diff(Truth{"d": {"t": {"p=1", "p=2"}}}, c.Server(i).Snapshot("hive")); d != "" {
			t.Errorf("FE %d: %s", i, d)
		}
	}
	if got := len(c.Statements()); got != 2 {
		t.Errorf("the cluster received %d statements, want 2", got)
	}
	// Each endpoint knows which of them it received itself.
	for i, want := range [][]string{nil, {"REFRESH CATALOG `hive`"}, {"REFRESH TABLE `hive`.`d`.`t`"}} {
		if got := c.Server(i).EndpointStatements(); !reflect.DeepEqual(got, want) {
			t.Errorf("FE %d received %q itself, want %q", i, got, want)
		}
	}
	c.Server(0).Down()
	mustOK(t, exec(t, c.Server(1), "SELECT 1"), "FE 1 while FE 0 is down")
}

func TestStateEndpoint(t *testing.T) {
	src := &truthSource{truth: Truth{"d": {"t": {"p=1"}}}}
	s := NewServer(Options{Loader: src.load})
	defer s.Close()
	mustOK(t, exec(t, s, "REFRESH CATALOG `hive`"), "refresh")
	post(t, s.URL+"/api/hmssync/v1/catalogs/hive/changes", "root", "", nil,
		`{"from_event_id":1,"to_event_id":2,"full_refresh":false,"changes":[{"event_id":2,"op":"ADD_PARTITIONS","db":"d","table":"t","partitions":["p=2"],"update_time":5}]}`)
	resp, err := http.Get(s.URL + "/_fetest/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	hive := st.Catalogs["hive"]
	if !hive.Initialised || hive.AppliedEventID != 2 {
		t.Errorf("catalog state: %+v", hive)
	}
	tbl := hive.Databases["d"].Tables["t"]
	if !reflect.DeepEqual(tbl.Partitions, []string{"p=1", "p=2"}) || tbl.RefreshedAt.IsZero() {
		t.Errorf("table state: %+v", tbl)
	}
	if !reflect.DeepEqual(st.Statements, []string{"REFRESH CATALOG `hive`"}) {
		t.Errorf("statements: %q", st.Statements)
	}
	if len(st.Changes) != 1 || st.Changes[0].Catalog != "hive" || st.Changes[0].To != 2 || len(st.Changes[0].Changes) != 1 {
		t.Errorf("changes: %+v", st.Changes)
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(st)
	if !strings.Contains(buf.String(), `"statements"`) || !strings.Contains(buf.String(), `"changes"`) {
		t.Errorf("state JSON lacks statements or changes: %s", buf.String())
	}
}
