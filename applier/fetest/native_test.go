package fetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func postBatch(t *testing.T, s *Server, catalog, body string) answer {
	t.Helper()
	return post(t, s.URL+"/api/hmssync/v1/catalogs/"+catalog+"/changes", "root", "", map[string]string{"Content-Type": "application/json"}, body)
}

type applyAnswer struct {
	Applied        bool  `json:"applied"`
	AppliedEventID int64 `json:"applied_event_id"`
}

func mustApply(t *testing.T, s *Server, body string, wantApplied bool, wantID int64) {
	t.Helper()
	a := postBatch(t, s, "hive", body)
	var got applyAnswer
	if a.HTTPStatus != 200 || json.Unmarshal([]byte(a.Raw), &got) != nil {
		t.Fatalf("batch %s: HTTP %d %s", body, a.HTTPStatus, a.Raw)
	}
	if got.Applied != wantApplied || got.AppliedEventID != wantID {
		t.Fatalf("batch %s: got %+v, want applied=%v applied_event_id=%d", body, got, wantApplied, wantID)
	}
}

func TestNativeBatchesChangeTheModelExactly(t *testing.T) {
	src := &truthSource{truth: Truth{"d": {"t": {"p=1"}}}}
	s := NewServer(Options{Loader: src.load})
	defer s.Close()

	mustApply(t, s, `{"from_event_id":-1,"to_event_id":10,"full_refresh":true,"changes":[]}`, true, 10)
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1"}}})

	// The loader's truth is not consulted for incremental ops (except
	// REFRESH_TABLE): change it to prove the model follows the descriptors.
	src.set(Truth{})
	mustApply(t, s, `{"from_event_id":10,"to_event_id":16,"full_refresh":false,"changes":[
		{"event_id":11,"op":"REGISTER_DATABASE","db":"e","update_time":1},
		{"event_id":12,"op":"REGISTER_TABLE","db":"e","table":"u","update_time":1},
		{"event_id":13,"op":"ADD_PARTITIONS","db":"e","table":"u","partitions":["k=2","k=1"],"update_time":1},
		{"event_id":14,"op":"DROP_PARTITIONS","db":"d","table":"t","partitions":["p=1"],"update_time":1},
		{"event_id":15,"op":"RENAME_TABLE","db":"d","table":"t","db_after":"e","table_after":"t2","update_time":1},
		{"event_id":16,"op":"REFRESH_PARTITIONS","db":"e","table":"u","partitions":["k=1"],"update_time":1}]}`, true, 16)
	wantSnapshot(t, s, Truth{"d": {}, "e": {"u": {"k=1", "k=2"}, "t2": {}}})

	// Already applied: acknowledged, not re-applied.
	mustApply(t, s, `{"from_event_id":15,"to_event_id":16,"full_refresh":false,"changes":[
		{"event_id":16,"op":"UNREGISTER_DATABASE","db":"e","update_time":1}]}`, false, 16)
	wantSnapshot(t, s, Truth{"d": {}, "e": {"u": {"k=1", "k=2"}, "t2": {}}})

	// Overlapping: only events after 16 are applied. A database rename is
	// checked against the metastore (see TestNativeRenameDatabaseIsCheckedWithTheMetastore),
	// which now holds the renamed database.
	src.set(Truth{"f": {}})
	mustApply(t, s, `{"from_event_id":14,"to_event_id":18,"full_refresh":false,"changes":[
		{"event_id":15,"op":"UNREGISTER_DATABASE","db":"e","update_time":1},
		{"event_id":17,"op":"RENAME_DATABASE","db":"d","db_after":"f","update_time":1},
		{"event_id":18,"op":"UNREGISTER_TABLE","db":"e","table":"t2","update_time":1}]}`, true, 18)
	wantSnapshot(t, s, Truth{"f": {}, "e": {"u": {"k=1", "k=2"}}})

	// A full refresh after a metastore reset moves the applied id down.
	src.set(Truth{"z": {"y": {"x=1"}}})
	mustApply(t, s, `{"from_event_id":18,"to_event_id":3,"full_refresh":true,"changes":[]}`, true, 3)
	wantSnapshot(t, s, Truth{"z": {"y": {"x=1"}}})
	if got := s.AppliedEventID("hive"); got != 3 {
		t.Errorf("AppliedEventID: got %d, want 3", got)
	}
	if got := s.AppliedEventID("other"); got != -1 {
		t.Errorf("AppliedEventID of an untouched catalog: got %d, want -1", got)
	}
	if got := len(s.Changes()); got != 5 {
		t.Errorf("Changes: got %d batches, want 5", got)
	}
}

// Hive 3.1 logs ALTER_DATABASE with the new name for a rename it does not
// perform; an FE that re-reads both names keeps the database it really has.
func TestNativeRenameDatabaseIsCheckedWithTheMetastore(t *testing.T) {
	src := &truthSource{truth: Truth{"d": {"t": {"p=1"}}}}
	s := NewServer(Options{Loader: src.load})
	defer s.Close()
	mustApply(t, s, `{"from_event_id":-1,"to_event_id":1,"full_refresh":true,"changes":[]}`, true, 1)

	// The rename did not happen: the metastore still has d and no e.
	mustApply(t, s, `{"from_event_id":1,"to_event_id":2,"full_refresh":false,"changes":[
		{"event_id":2,"op":"RENAME_DATABASE","db":"d","db_after":"e","update_time":1}]}`, true, 2)
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1"}}})

	// A rename that happened moves the database with its cached tables.
	src.set(Truth{"f": {"t": {"p=1"}}})
	mustApply(t, s, `{"from_event_id":2,"to_event_id":3,"full_refresh":false,"changes":[
		{"event_id":3,"op":"RENAME_DATABASE","db":"d","db_after":"f","update_time":1}]}`, true, 3)
	wantSnapshot(t, s, Truth{"f": {"t": {"p=1"}}})

	// Without a metastore to ask, the FE takes the rename as it comes.
	bare := NewServer(Options{})
	defer bare.Close()
	mustApply(t, bare, `{"from_event_id":-1,"to_event_id":1,"full_refresh":false,"changes":[
		{"event_id":1,"op":"REGISTER_DATABASE","db":"d","update_time":1},
		{"event_id":2,"op":"RENAME_DATABASE","db":"d","db_after":"e","update_time":1}]}`, true, 1)
	wantSnapshot(t, bare, Truth{"e": {}})
}

func TestNativeRejectsBadRequests(t *testing.T) {
	s := NewServer(Options{Password: "pw"})
	defer s.Close()
	cases := []struct {
		user, pass, body string
		want             int
	}{
		{"root", "nope", `{"from_event_id":1,"to_event_id":2,"changes":[]}`, http.StatusUnauthorized},
		{"root", "pw", `{"from_event_id":1,"to_event_id":2,"changes":[`, http.StatusBadRequest},
		{"root", "pw", `{"from_event_id":1,"changes":[]}`, http.StatusBadRequest},
		{"root", "pw", `{"from_event_id":3,"to_event_id":2,"changes":[]}`, http.StatusUnprocessableEntity},
		{"root", "pw", `{"from_event_id":1,"to_event_id":2,"changes":[{"event_id":2,"op":"DROP_EVERYTHING","db":"d","update_time":0}]}`, http.StatusUnprocessableEntity},
		{"root", "pw", `{"from_event_id":1,"to_event_id":2,"changes":[{"event_id":2,"op":"ADD_PARTITIONS","db":"d","table":"t","update_time":0}]}`, http.StatusUnprocessableEntity},
		{"root", "pw", `{"from_event_id":1,"to_event_id":2,"changes":[],"a_future_key":{"x":1}}`, http.StatusOK},
	}
	for _, c := range cases {
		a := post(t, s.URL+"/api/hmssync/v1/catalogs/hive/changes", c.user, c.pass, nil, c.body)
		if a.HTTPStatus != c.want {
			t.Errorf("%s as %s/%s: got HTTP %d %s, want %d", c.body, c.user, c.pass, a.HTTPStatus, a.Raw, c.want)
		}
		if c.want != http.StatusOK && !strings.Contains(a.Raw, `"error"`) {
			t.Errorf("%s: an error answer should carry {\"error\":...}, got %s", c.body, a.Raw)
		}
	}
	for _, f := range []struct {
		fault Fault
		want  int
	}{{Fault{Code: 401}, 401}, {Fault{Code: 403}, 403}, {Fault{Code: 1}, 400}, {Fault{HTTPStatus: 502}, 502}, {Fault{Code: 503}, 503}} {
		s.InjectFault(Fault{Native: true, Times: 1, Code: f.fault.Code, HTTPStatus: f.fault.HTTPStatus})
		a := post(t, s.URL+"/api/hmssync/v1/catalogs/hive/changes", "root", "pw", nil, `{"from_event_id":1,"to_event_id":2,"changes":[]}`)
		if a.HTTPStatus != f.want {
			t.Errorf("fault %+v: got HTTP %d, want %d", f.fault, a.HTTPStatus, f.want)
		}
	}
	// An SQL-only fault does not touch the native endpoint.
	s.InjectFault(Fault{SQL: true, Code: 500})
	if a := post(t, s.URL+"/api/hmssync/v1/catalogs/hive/changes", "root", "pw", nil, fmt.Sprintf(`{"from_event_id":%d,"to_event_id":%d,"changes":[]}`, 2, 3)); a.HTTPStatus != 200 {
		t.Errorf("SQL-only fault leaked to native: HTTP %d", a.HTTPStatus)
	}
}
