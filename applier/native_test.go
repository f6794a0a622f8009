package applier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/change"
)

func newNativeFor(t *testing.T, url, password string) *Native {
	t.Helper()
	a, err := New(Config{Dialect: DialectNative, URL: url, User: "root", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	return a.(*Native)
}

func TestNativeRoundTrip(t *testing.T) {
	truth := fetest.Truth{"d": {"t": {"p=1"}}}
	fe := fetest.NewServer(fetest.Options{Password: "pw", Loader: func(context.Context, string) (fetest.Truth, error) { return truth, nil }})
	defer fe.Close()
	a := newNativeFor(t, fe.URL, "pw")
	ctx := context.Background()
	if a.Dialect() != "native" || a.Scope() != ScopeLocal {
		t.Errorf("dialect %q scope %q, want native local", a.Dialect(), a.Scope())
	}
	if err := a.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if id, err := a.AppliedEventID(ctx, "hive"); err != nil || id != -1 {
		t.Fatalf("AppliedEventID before any batch: %d, %v; want -1", id, err)
	}

	full := change.Batch{Catalog: "hive", From: -1, To: 7, FullRefresh: true}
	incr := change.Batch{Catalog: "hive", From: 7, To: 9, Changes: []change.Descriptor{
		{EventID: 8, Op: change.AddPartitions, DB: "d", Table: "t", Partitions: []string{"p=2"}, UpdateTime: 100},
		{EventID: 9, Op: change.RenameTable, DB: "d", Table: "t", DBAfter: "d", TableAfter: "t2", UpdateTime: 101},
	}}
	for _, b := range []change.Batch{full, incr, incr} { // the repeat must be a no-op
		if err := a.Apply(ctx, b); err != nil {
			t.Fatalf("Apply %+v: %v", b, err)
		}
	}
	if d := fetest.Diff(fetest.Truth{"d": {"t2": {"p=1", "p=2"}}}, fe.Snapshot("hive")); d != "" {
		t.Errorf("FE cache: %s", d)
	}
	if id, err := a.AppliedEventID(ctx, "hive"); err != nil || id != 9 {
		t.Errorf("AppliedEventID: %d, %v; want 9", id, err)
	}
	full.Changes = []change.Descriptor{} // sent as [] rather than null
	want := []change.Batch{full, incr, incr}
	if got := fe.Changes(); !reflect.DeepEqual(got, want) {
		t.Errorf("FE received\n  %+v\nwant\n  %+v", got, want)
	}
}

func TestNativeCatalogNameIsEscapedInThePath(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	a := newNativeFor(t, fe.URL, "")
	name := "a/b c?d#e%f"
	if err := a.Apply(context.Background(), change.Batch{Catalog: name, From: 0, To: 1}); err != nil {
		t.Fatal(err)
	}
	if got := fe.Changes(); len(got) != 1 || got[0].Catalog != name {
		t.Errorf("FE saw catalog %+v, want %q", got, name)
	}
	if got := fe.AppliedEventID(name); got != 1 {
		t.Errorf("applied id of %q: %d, want 1", name, got)
	}
}

func TestNativeErrorClasses(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{Password: "pw"})
	defer fe.Close()
	b := change.Batch{Catalog: "hive", From: 0, To: 1, Changes: []change.Descriptor{{EventID: 1, Op: change.RefreshTable, DB: "d", Table: "t"}}}
	cases := []struct {
		name  string
		fault fetest.Fault
		want  Class
	}{
		{"401", fetest.Fault{HTTPStatus: 401}, Auth},
		{"403", fetest.Fault{HTTPStatus: 403}, Auth},
		{"400", fetest.Fault{HTTPStatus: 400}, Deterministic},
		{"404: catalog unknown to the FE", fetest.Fault{HTTPStatus: 404}, Configuration},
		{"408", fetest.Fault{HTTPStatus: 408}, Transient},
		{"409", fetest.Fault{HTTPStatus: 409}, Deterministic},
		{"429", fetest.Fault{HTTPStatus: 429}, Transient},
		{"422", fetest.Fault{HTTPStatus: 422}, Deterministic},
		{"500", fetest.Fault{HTTPStatus: 500}, Transient},
		{"503", fetest.Fault{HTTPStatus: 503}, Transient},
	}
	a := newNativeFor(t, fe.URL, "pw")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.fault
			f.Times = 1
			fe.InjectFault(f)
			checkClass(t, a.Apply(context.Background(), b), &c.want)
		})
	}
	t.Run("2xx is success", func(t *testing.T) {
		fe.InjectFault(fetest.Fault{HTTPStatus: 204, Body: " ", Times: 1})
		checkClass(t, a.Apply(context.Background(), b), nil)
	})
	t.Run("wrong password", func(t *testing.T) {
		checkClass(t, newNativeFor(t, fe.URL, "nope").Apply(context.Background(), b), ptr(Auth))
		checkClass(t, newNativeFor(t, fe.URL, "nope").Check(context.Background()), ptr(Auth))
	})
	t.Run("invalid descriptor is not sent", func(t *testing.T) {
		before := len(fe.Changes())
		bad := change.Batch{Catalog: "hive", To: 1, Changes: []change.Descriptor{{EventID: 1, Op: change.RenameTable, DB: "d", Table: "t"}}}
		checkClass(t, a.Apply(context.Background(), bad), ptr(Deterministic))
		if len(fe.Changes()) != before {
			t.Error("an invalid batch reached the FE")
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		fe.Down()
		defer func() { _ = fe.Up() }()
		checkClass(t, a.Apply(context.Background(), b), ptr(Transient))
		checkClass(t, a.Check(context.Background()), ptr(Transient))
	})
}

func TestNativeCheckOfAnFEWithoutTheProtocol(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	checkClass(t, newNativeFor(t, srv.URL, "").Check(context.Background()), ptr(Configuration))
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"protocol":"hmssync-fe","versions":[2]}`))
	}))
	defer other.Close()
	checkClass(t, newNativeFor(t, other.URL, "").Check(context.Background()), ptr(Configuration))
}

// The FE's own "no such catalog" answer (protocol rule 3) reaches the operator
// verbatim, with the catalog's name, and without blaming the password.
func TestNativeUnknownCatalogIsAConfigurationError(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	fe.InjectFault(fetest.Fault{Native: true, HTTPStatus: 404, Message: "catalog lakehouse is not defined on this FE"})
	err := newNativeFor(t, fe.URL, "").Apply(context.Background(), change.Batch{Catalog: "lakehouse", From: 0, To: 1})
	checkClass(t, err, ptr(Configuration))
	for _, want := range []string{"catalog lakehouse is not defined on this FE", `"lakehouse"`, "404"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(strings.ToLower(err.Error()), "password") {
		t.Errorf("a configuration error blames the password: %q", err)
	}
}

func TestRejectedObjects(t *testing.T) {
	changes := []change.Descriptor{
		{EventID: 1, Op: change.AddPartitions, DB: "d", Table: "t", Partitions: []string{"p=1"}},
		{EventID: 2, Op: change.RenameTable, DB: "d", Table: "a", DBAfter: "e", TableAfter: "b"},
		{EventID: 3, Op: change.RefreshDatabase, DB: "f"},
		{EventID: 4, Op: change.RefreshTable, DB: "d", Table: "t"},
	}
	dt := change.Object{DB: "d", Table: "t"}
	cases := []struct {
		name, body string
		want       []change.Object
	}{
		{"one item", `{"error":"x","rejected":[{"index":0,"error":"bad serde"}]}`, []change.Object{dt}},
		{"a rename names both tables", `{"rejected":[{"index":1}]}`, []change.Object{{DB: "d", Table: "a"}, {DB: "e", Table: "b"}}},
		{"a database item", `{"rejected":[{"index":2}]}`, []change.Object{{DB: "f"}}},
		{"repeats are kept once", `{"rejected":[{"index":3},{"index":0},{"index":3}]}`, []change.Object{dt}},
		{"in the answer's order", `{"rejected":[{"index":2},{"index":0}]}`, []change.Object{{DB: "f"}, dt}},
		{"no rejected key", `{"error":"x"}`, nil},
		{"empty list", `{"error":"x","rejected":[]}`, nil},
		{"index out of range", `{"rejected":[{"index":0},{"index":4}]}`, nil},
		{"negative index", `{"rejected":[{"index":-1}]}`, nil},
		{"no index", `{"rejected":[{"error":"x"}]}`, nil},
		{"index not an integer", `{"rejected":[{"index":1.5}]}`, nil},
		{"index a string", `{"rejected":[{"index":"0"}]}`, nil},
		{"not JSON", `<html>bad request</html>`, nil},
		{"rejected not a list", `{"rejected":{"index":0}}`, nil},
	}
	for _, c := range cases {
		if got := rejectedObjects([]byte(c.body), changes); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if got := rejectedObjects([]byte(`{"rejected":[{"index":0}]}`), nil); got != nil {
		t.Errorf("a batch without changes: got %v", got)
	}

	var many []change.Descriptor
	var items []string
	for i := range 2 * maxRejectedObjects {
		many = append(many, change.Descriptor{EventID: int64(i), Op: change.RefreshTable, DB: "d", Table: fmt.Sprint("t", i)})
		items = append(items, fmt.Sprintf(`{"index":%d}`, i))
	}
	got := rejectedObjects([]byte(`{"rejected":[`+strings.Join(items, ",")+`]}`), many)
	if len(got) != maxRejectedObjects || got[0] != (change.Object{DB: "d", Table: "t0"}) {
		t.Errorf("kept %d objects (first %v), want the first %d", len(got), got[:1], maxRejectedObjects)
	}
}

// TestNativeErrorNamesTheRejectedItems has the FE name the rejected item in its
// answer: the *Error carries what that item concerns, only for a 4xx.
func TestNativeErrorNamesTheRejectedItems(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	a := newNativeFor(t, fe.URL, "")
	b := change.Batch{Catalog: "hive", From: 0, To: 2, Changes: []change.Descriptor{
		{EventID: 1, Op: change.RefreshTable, DB: "d", Table: "good"},
		{EventID: 2, Op: change.RefreshTable, DB: "d", Table: "bad"},
	}}
	answer := `{"error":"unsupported input format","rejected":[{"index":1,"error":"unsupported input format"}]}`
	cases := []struct {
		status int
		want   []change.Object
	}{
		{400, []change.Object{{DB: "d", Table: "bad"}}},
		{422, []change.Object{{DB: "d", Table: "bad"}}},
		{503, nil},
	}
	for _, c := range cases {
		fe.InjectFault(fetest.Fault{Native: true, HTTPStatus: c.status, Body: answer, Times: 1})
		err := a.Apply(context.Background(), b)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("HTTP %d: %v is not an *Error", c.status, err)
		}
		if !reflect.DeepEqual(e.Objects, c.want) {
			t.Errorf("HTTP %d: objects %v, want %v", c.status, e.Objects, c.want)
		}
		if !strings.Contains(err.Error(), "unsupported input format") {
			t.Errorf("HTTP %d: error %q does not quote the FE", c.status, err)
		}
	}
}

// TestNativeRejectedItemsThroughTheFE has the fake FE reject one table: the
// *Error names it, and the FE applied nothing of the batch.
func TestNativeRejectedItemsThroughTheFE(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	fe.InjectFault(fetest.Fault{RejectTable: "d.bad", Times: 1})
	a := newNativeFor(t, fe.URL, "")
	b := change.Batch{Catalog: "hive", From: 0, To: 3, Changes: []change.Descriptor{
		{EventID: 1, Op: change.RefreshTable, DB: "d", Table: "good"},
		{EventID: 2, Op: change.RenameTable, DB: "d", Table: "bad", DBAfter: "e", TableAfter: "moved"},
		{EventID: 3, Op: change.RefreshDatabase, DB: "f"},
	}}
	err := a.Apply(context.Background(), b)
	checkClass(t, err, ptr(Deterministic))
	var e *Error
	want := []change.Object{{DB: "d", Table: "bad"}, {DB: "e", Table: "moved"}}
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *Error", err)
	}
	if !reflect.DeepEqual(e.Objects, want) {
		t.Fatalf("objects of %v: %v, want %v", err, e.Objects, want)
	}
	if got := fe.AppliedEventID("hive"); got != -1 {
		t.Errorf("the FE applied up to %d of a rejected batch", got)
	}
	if err := a.Apply(context.Background(), b); err != nil {
		t.Fatalf("after the fault's one use: %v", err)
	}
	if got := fe.AppliedEventID("hive"); got != 3 {
		t.Errorf("applied %d, want 3", got)
	}
}
