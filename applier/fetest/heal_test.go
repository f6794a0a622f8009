package fetest

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestNativeRefreshDatabaseReloadsTheDatabase(t *testing.T) {
	src := &truthSource{truth: Truth{"d": {"t": {"p=1"}, "u": nil}, "e": {"w": {"k=1"}}}}
	s := NewServer(Options{Loader: src.load})
	defer s.Close()
	mustApply(t, s, `{"from_event_id":-1,"to_event_id":10,"full_refresh":true,"changes":[]}`, true, 10)

	// The metastore moves on; only the refreshed database follows it, with
	// its table list and every table's partitions.
	src.set(Truth{"d": {"t": {"p=1", "p=2"}, "v": {"x=1"}}, "e": {"w": {"k=1", "k=2"}}, "n": {"z": nil}})
	mustApply(t, s, `{"from_event_id":10,"to_event_id":11,"full_refresh":false,"changes":[
		{"event_id":11,"op":"REFRESH_DATABASE","db":"d","update_time":1}]}`, true, 11)
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1", "p=2"}, "v": {"x=1"}}, "e": {"w": {"k=1"}}})

	// A database the FE did not list is loaded; one the metastore no longer
	// has is forgotten.
	src.set(Truth{"d": {"t": {"p=1", "p=2"}, "v": {"x=1"}}, "n": {"z": nil}})
	mustApply(t, s, `{"from_event_id":11,"to_event_id":13,"full_refresh":false,"changes":[
		{"event_id":12,"op":"REFRESH_DATABASE","db":"n","update_time":1},
		{"event_id":13,"op":"REFRESH_DATABASE","db":"e","update_time":1}]}`, true, 13)
	wantSnapshot(t, s, Truth{"d": {"t": {"p=1", "p=2"}, "v": {"x=1"}}, "n": {"z": nil}})
}

// rejection is a native answer that names the rejected items.
type rejection struct {
	Error    string `json:"error"`
	Rejected []struct {
		Index int    `json:"index"`
		Error string `json:"error"`
	} `json:"rejected"`
}

func (r rejection) indexes() []int {
	var out []int
	for _, x := range r.Rejected {
		out = append(out, x.Index)
	}
	return out
}

func TestRejectTableOnTheNativeEndpoint(t *testing.T) {
	src := &truthSource{truth: Truth{"d": {"good": {"p=1"}, "bad": {"p=1"}, "x": nil}}}
	s := NewServer(Options{Loader: src.load})
	defer s.Close()
	mustApply(t, s, `{"from_event_id":-1,"to_event_id":10,"full_refresh":true,"changes":[]}`, true, 10)
	s.InjectFault(Fault{RejectTable: "d.bad", Times: 1})
	s.InjectFault(Fault{RejectTable: "d", Message: "database d is broken", Times: 1})

	poison := `{"from_event_id":10,"to_event_id":13,"full_refresh":false,"changes":[
		{"event_id":11,"op":"ADD_PARTITIONS","db":"d","table":"good","partitions":["p=2"],"update_time":1},
		{"event_id":12,"op":"ADD_PARTITIONS","db":"d","table":"bad","partitions":["p=2"],"update_time":1},
		{"event_id":13,"op":"RENAME_TABLE","db":"d","table":"x","db_after":"d","table_after":"bad","update_time":1}]}`
	a := postBatch(t, s, "hive", poison)
	var r rejection
	if a.HTTPStatus != 400 || json.Unmarshal([]byte(a.Raw), &r) != nil {
		t.Fatalf("want 400 naming the rejected items, got %d %s", a.HTTPStatus, a.Raw)
	}
	if got := r.indexes(); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("rejected indexes %v, want [1 2] (%s)", got, a.Raw)
	}
	if r.Error == "" || r.Rejected[0].Error == "" {
		t.Errorf("the answer gives no reason: %s", a.Raw)
	}
	if s.AppliedEventID("hive") != 10 {
		t.Errorf("applied %d after a rejected batch, want 10", s.AppliedEventID("hive"))
	}
	wantSnapshot(t, s, Truth{"d": {"good": {"p=1"}, "bad": {"p=1"}, "x": nil}})

	// A batch that does not concern a rejected object is applied and leaves
	// the faults' uses alone (the first one is used up, the database one is
	// left): a table change does not concern its database.
	mustApply(t, s, `{"from_event_id":10,"to_event_id":11,"full_refresh":false,"changes":[
		{"event_id":11,"op":"ADD_PARTITIONS","db":"d","table":"good","partitions":["p=2"],"update_time":1}]}`, true, 11)
	if got := s.Faults(); len(got) != 1 || got[0].RejectTable != "d" {
		t.Errorf("faults left %+v, want the database one", got)
	}

	// The database fault names the database-level item.
	a = postBatch(t, s, "hive", `{"from_event_id":11,"to_event_id":13,"full_refresh":false,"changes":[
		{"event_id":12,"op":"REFRESH_TABLE","db":"d","table":"good","update_time":1},
		{"event_id":13,"op":"REFRESH_DATABASE","db":"d","update_time":1}]}`)
	r = rejection{}
	if a.HTTPStatus != 400 || json.Unmarshal([]byte(a.Raw), &r) != nil || !reflect.DeepEqual(r.indexes(), []int{1}) || r.Error != "database d is broken" {
		t.Errorf("database fault: want 400 naming item 1 with the message, got %d %s", a.HTTPStatus, a.Raw)
	}

	// Both faults are used up: the poison batch now applies.
	mustApply(t, s, poison, true, 13)
	wantSnapshot(t, s, Truth{"d": {"good": {"p=1", "p=2"}, "bad": {}}})
	if got := len(s.Faults()); got != 0 {
		t.Errorf("%d faults left, want 0", got)
	}
}

func TestRejectTableOnTheQueryEndpoint(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	s.InjectFault(Fault{RejectTable: "d.bad"})
	s.InjectFault(Fault{RejectTable: "e", Times: 1})

	for _, stmt := range []string{"REFRESH TABLE `hive`.`d`.`bad`", "refresh table hive.d.bad"} {
		a := exec(t, s, stmt)
		if a.Code != 1 || !strings.Contains(a.text(), "rejected") || strings.Contains(a.text(), "does not exist") {
			t.Errorf("%s: want code 1 rejected, got %s", stmt, a.Raw)
		}
	}
	for _, stmt := range []string{"REFRESH TABLE `hive`.`d`.`good`", "REFRESH DATABASE `hive`.`d`",
		"REFRESH CATALOG `hive`", "REFRESH TABLE `hive`.`e`.`t`", "SELECT 1"} {
		mustOK(t, exec(t, s, stmt), stmt+" does not concern a rejected object")
	}
	a := exec(t, s, "REFRESH DATABASE `hive`.`e` PROPERTIES(\"invalid_cache\"=\"false\")")
	if a.Code != 1 || !strings.Contains(a.text(), "rejected") {
		t.Errorf("database fault: want code 1 rejected, got %s", a.Raw)
	}
	mustOK(t, exec(t, s, "REFRESH DATABASE `hive`.`e`"), "the database fault is used up")
	if a := exec(t, s, "REFRESH TABLE `hive`.`d`.`bad`"); a.Code != 1 {
		t.Errorf("a fault without times stays: got %s", a.Raw)
	}
}

func TestRejectTableOverHTTP(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	ctl := func(method, body string) string {
		req, _ := http.NewRequest(method, s.URL+"/_fetest/faults", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s /_fetest/faults: %d %s", method, resp.StatusCode, raw)
		}
		return string(raw)
	}
	ctl("POST", `{"reject_table":"d.t","sql":true,"times":1}`)
	if got := ctl("GET", ""); !strings.Contains(got, `"reject_table":"d.t"`) {
		t.Errorf("the fault list does not show reject_table: %s", got)
	}
	if a := exec(t, s, "REFRESH TABLE `hive`.`d`.`t`"); a.Code != 1 {
		t.Errorf("want code 1, got %s", a.Raw)
	}
	mustOK(t, exec(t, s, "REFRESH TABLE `hive`.`d`.`t`"), "after its one use")

	var f Fault
	if err := json.Unmarshal([]byte(`{"reject_table":"d"}`), &f); err != nil || f.RejectTable != "d" {
		t.Errorf("unmarshal: %+v %v", f, err)
	}
	if b, _ := json.Marshal(Fault{RejectTable: "d.t", Times: 2}); string(b) != `{"times":2,"reject_table":"d.t"}` {
		t.Errorf("marshal: %s", b)
	}
}
