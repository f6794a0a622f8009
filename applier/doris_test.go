package applier

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/change"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newDorisFor(t *testing.T, url, password string, timeout time.Duration) Applier {
	t.Helper()
	a, err := New(Config{Dialect: DialectDoris, URL: url, User: "root", Password: password, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestDorisAppliesThroughTheFE(t *testing.T) {
	truth := fetest.Truth{"d": {"t": {"p=1", "p=2"}, "new": {"k=1"}}}
	fe := fetest.NewServer(fetest.Options{Password: "pw", Loader: func(context.Context, string) (fetest.Truth, error) { return truth, nil }})
	defer fe.Close()
	fe.SetCache("hive", fetest.Truth{"d": {"t": {"p=1"}, "old": nil}})
	a := newDorisFor(t, fe.URL, "pw", 0)
	if a.Dialect() != "doris" || a.Scope() != ScopeCluster {
		t.Errorf("dialect %q scope %q, want doris cluster", a.Dialect(), a.Scope())
	}
	b := ops(addP("d", "t", "p=2"), unreg("d", "old"), reg("d", "new"))
	if err := a.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	want := []string{dbD, tableDT, "REFRESH TABLE `hive`.`d`.`new`"}
	if got := fe.Statements(); !reflect.DeepEqual(got, want) {
		t.Errorf("FE received\n  %q\nwant\n  %q", got, want)
	}
	if d := fetest.Diff(truth, fe.Snapshot("hive")); d != "" {
		t.Errorf("FE cache not converged: %s", d)
	}
}

func TestDorisErrorClasses(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{Password: "pw"})
	defer fe.Close()
	tableBatch := ops(addP("d", "t", "p=1"))
	catalogBatch := ops(regDB("d"))
	cases := []struct {
		name  string
		fault fetest.Fault
		b     change.Batch
		want  *Class // nil: success
	}{
		{"table does not exist", fetest.Fault{NotExist: true}, tableBatch, nil},
		{"database does not exist", fetest.Fault{NotExist: true}, ops(reg("d", "t")), nil},
		{"catalog does not exist", fetest.Fault{NotExist: true}, catalogBatch, ptr(Configuration)},
		{"unknown catalog in a table statement", fetest.Fault{Code: 1, Message: "errCode = 2, detailMessage = Unknown catalog 'hive'"}, tableBatch, ptr(Configuration)},
		{"SQL error", fetest.Fault{Code: 1, Message: "Failed to execute sql: errCode = 2, detailMessage = Syntax error"}, tableBatch, ptr(Deterministic)},
		{"access denied", fetest.Fault{Code: 1, Message: "errCode = 1045, detailMessage = Access denied; you need the SHOW privilege"}, tableBatch, ptr(Auth)},
		{"code 401", fetest.Fault{Code: 401}, tableBatch, ptr(Auth)},
		{"code 403", fetest.Fault{Code: 403}, tableBatch, ptr(Deterministic)},
		{"code 500", fetest.Fault{Code: 500}, tableBatch, ptr(Transient)},
		{"code 503", fetest.Fault{Code: 503}, tableBatch, ptr(Transient)},
		{"code 42", fetest.Fault{Code: 42}, tableBatch, ptr(Deterministic)},
		{"HTTP 500", fetest.Fault{HTTPStatus: 500}, tableBatch, ptr(Transient)},
		{"HTTP 502", fetest.Fault{HTTPStatus: 502}, tableBatch, ptr(Transient)},
		{"HTTP 401 from a proxy", fetest.Fault{HTTPStatus: 401}, tableBatch, ptr(Auth)},
		{"HTTP 403 from a proxy", fetest.Fault{HTTPStatus: 403}, tableBatch, ptr(Auth)},
		{"HTTP 404: not a Doris FE", fetest.Fault{HTTPStatus: 404}, tableBatch, ptr(Configuration)},
		{"HTTP 405: not a Doris FE", fetest.Fault{HTTPStatus: 405}, tableBatch, ptr(Configuration)},
		{"HTTP 408 request timeout", fetest.Fault{HTTPStatus: 408}, tableBatch, ptr(Transient)},
		{"HTTP 429 too many requests", fetest.Fault{HTTPStatus: 429}, tableBatch, ptr(Transient)},
		{"HTTP 400", fetest.Fault{HTTPStatus: 400}, tableBatch, ptr(Deterministic)},
		{"code 0 with a string in data", fetest.Fault{Body: `{"msg":"success","code":0,"data":"Failed to execute sql: boom","count":0}`}, tableBatch, ptr(Deterministic)},
		{"code 0 with null data", fetest.Fault{Body: `{"msg":"success","code":0,"data":null,"count":0}`}, tableBatch, ptr(Deterministic)},
		{"code 0 escaping does not exist", fetest.Fault{Body: `{"msg":"success","code":0,"data":"Table [t] does not exist in database [d].","count":0}`}, tableBatch, nil},
		{"not an envelope", fetest.Fault{Body: "<html>proxy login</html>"}, tableBatch, ptr(Configuration)},
		{"JSON without a code", fetest.Fault{Body: `{"status":"ok"}`}, tableBatch, ptr(Configuration)},
	}
	a := newDorisFor(t, fe.URL, "pw", 0)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fe.ClearFaults()
			f := c.fault
			f.Times = 1
			fe.InjectFault(f)
			before := len(fe.Statements())
			err := a.Apply(context.Background(), c.b)
			if len(fe.Statements()) == before {
				t.Fatal("nothing reached the FE")
			}
			checkClass(t, err, c.want)
		})
	}
}

func ptr(c Class) *Class { return &c }

func checkClass(t *testing.T, err error, want *Class) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("want success, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want a %s error, got success", *want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *Error, got %T %v", err, err)
	}
	if got := ClassOf(err); got != *want {
		t.Fatalf("class %s, want %s: %v", got, *want, err)
	}
}

func TestDorisFailuresOutsideTheEnvelope(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{Password: "pw"})
	defer fe.Close()
	b := ops(addP("d", "t", "p=1"))

	t.Run("wrong password", func(t *testing.T) {
		err := newDorisFor(t, fe.URL, "wrong", 0).Apply(context.Background(), b)
		checkClass(t, err, ptr(Auth))
	})
	t.Run("timeout", func(t *testing.T) {
		fe.InjectFault(fetest.Fault{Delay: 10 * time.Second, Times: 1})
		defer fe.ClearFaults()
		err := newDorisFor(t, fe.URL, "pw", 50*time.Millisecond).Apply(context.Background(), b)
		checkClass(t, err, ptr(Transient))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a statement timeout should say so: %v", err)
		}
	})
	t.Run("caller cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := newDorisFor(t, fe.URL, "pw", 0).Apply(ctx, b)
		checkClass(t, err, ptr(Transient))
	})
	t.Run("invalid batch is not sent", func(t *testing.T) {
		before := len(fe.Statements())
		for _, bad := range []change.Batch{
			ops(change.Descriptor{Op: change.AddPartitions, DB: "d", Table: "t"}),
			ops(addP("d", "t\xff", "p=1")),
			{Catalog: "", To: 1},
			{Catalog: "hive", From: 5, To: 4},
		} {
			err := newDorisFor(t, fe.URL, "pw", 0).Apply(context.Background(), bad)
			checkClass(t, err, ptr(Deterministic))
		}
		if len(fe.Statements()) != before {
			t.Errorf("an invalid batch reached the FE: %q", fe.Statements()[before:])
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		fe.Down()
		defer func() {
			if err := fe.Up(); err != nil {
				t.Fatal(err)
			}
		}()
		err := newDorisFor(t, fe.URL, "pw", 0).Apply(context.Background(), b)
		checkClass(t, err, ptr(Transient))
	})
}

func TestDorisCheck(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{Password: "pw"})
	defer fe.Close()
	if err := newDorisFor(t, fe.URL, "pw", 0).Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got := fe.Statements(); !reflect.DeepEqual(got, []string{"SELECT 1"}) {
		t.Errorf("Check sent %q, want SELECT 1", got)
	}
	checkClass(t, newDorisFor(t, fe.URL, "bad", 0).Check(context.Background()), ptr(Auth))
	fe.Down()
	checkClass(t, newDorisFor(t, fe.URL, "pw", 0).Check(context.Background()), ptr(Transient))
}

// TestDorisOneStatementInFlight drives one Applier from several goroutines
// while the FE answers slowly; the FE records any overlapping request.
func TestDorisOneStatementInFlight(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	fe.InjectFault(fetest.Fault{Delay: 5 * time.Millisecond})
	a := newDorisFor(t, fe.URL, "", 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cat := string(rune('a' + i))
			b := ops(addP("d", "t", "p=1"), addP("d", "u", "p=1"), reg("e", "v"))
			b.Catalog = cat
			errs <- a.Apply(context.Background(), b)
			errs <- a.Check(context.Background())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each batch is 4 statements; a Check that finds a statement in flight
	// sends nothing (see TestDorisCheckDoesNotWaitForTheStatementInFlight).
	refreshes, checks := 0, 0
	for _, st := range fe.Statements() {
		if st == "SELECT 1" {
			checks++
		} else {
			refreshes++
		}
	}
	if refreshes != 4*4 || checks > 4 {
		t.Fatalf("FE received %d REFRESH and %d SELECT 1, want %d and at most 4", refreshes, checks, 4*4)
	}
	if got := fe.Overlaps(); got != 0 {
		t.Errorf("%d requests overlapped another one", got)
	}
}

func TestMissingObject(t *testing.T) {
	cases := map[string]string{
		"Failed to execute sql: errCode = 2, detailMessage = Table [t] does not exist in database [d].": "table",
		"errCode = 2, detailMessage = Database [d] does not exist in catalog [c].":                      "database",
		"errCode = 2, detailMessage = Unknown catalog 'c'":                                              "catalog",
		"Catalog c doesn't exist":         "catalog",
		"Unknown database 'x'":            "database",
		"Table my_catalog does not exist": "table",
		"something does not exist":        "object",
		"Syntax error near catalog":       "",
	}
	for text, want := range cases {
		if got := missingObject(text); got != want {
			t.Errorf("%q: got %q, want %q", text, got, want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	for _, c := range []Config{
		{Dialect: "mysql", URL: "http://x:1"},
		{Dialect: "doris", URL: ""},
		{Dialect: "doris", URL: "ftp://x:1"},
		{Dialect: "doris", URL: "http://root:pw@x:1"},
		{Dialect: "native", URL: "http://x:1?a=b"},
		{Dialect: "doris", URL: "http://x:1", Timeout: -time.Second},
		{Dialect: "doris", URL: "http://x:1", Scope: "everywhere"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v: want an error", c)
		}
	}
	a, err := New(Config{Dialect: "doris", URL: "http://x:1/", Scope: ScopeLocal})
	if err != nil {
		t.Fatal(err)
	}
	if a.Scope() != ScopeLocal {
		t.Errorf("forced scope ignored: %s", a.Scope())
	}
}

// Observe sees every statement a batch becomes, with its outcome, so that the
// sidecar's statement metric counts what reached the FE.
func TestDorisObserveSeesEveryStatement(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	fe.InjectFault(fetest.Fault{Match: "`t2`", SQL: true, Code: 500, Message: "internal error", Times: 1})
	type seen struct {
		catalog string
		failed  bool
	}
	var got []seen
	a, err := New(Config{Dialect: DialectDoris, URL: fe.URL, User: "root", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Two tables of one database: two REFRESH TABLE statements; the second fails.
	b := ops(addP("d", "t1", "p=1"), addP("d", "t2", "p=1"))
	ctx := WithObserver(context.Background(), func(catalog string, err error) { got = append(got, seen{catalog, err != nil}) })
	if err := a.Apply(ctx, b); err == nil {
		t.Fatal("want the injected failure of the second statement")
	}
	want := []seen{{"hive", false}, {"hive", true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("observed %+v; want %+v", got, want)
	}
}

// A configuration error names what the FE answered, never the password: the
// operator must be sent to the catalog or the URL, not to the credentials.
func TestDorisConfigurationErrorsQuoteTheFE(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{Password: "pw"})
	defer fe.Close()
	a := newDorisFor(t, fe.URL, "pw", 0)
	cases := []struct {
		name  string
		fault fetest.Fault
		b     change.Batch
		quote string // from the FE's answer
	}{
		{"unknown catalog", fetest.Fault{Code: 1, Message: "errCode = 2, detailMessage = Unknown catalog 'hive'"}, ops(addP("d", "t", "p=1")), "Unknown catalog 'hive'"},
		{"not an envelope", fetest.Fault{Body: "<html>proxy login page</html>"}, ops(addP("d", "t", "p=1")), "<html>proxy login page</html>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fe.ClearFaults()
			f := c.fault
			f.Times = 1
			fe.InjectFault(f)
			err := a.Apply(context.Background(), c.b)
			checkClass(t, err, ptr(Configuration))
			msg := err.Error()
			if !strings.Contains(msg, c.quote) {
				t.Errorf("error %q does not quote the FE's answer %q", msg, c.quote)
			}
			if strings.Contains(strings.ToLower(msg), "password") {
				t.Errorf("a configuration error blames the password: %q", msg)
			}
		})
	}
}

// A REFRESH held longer than the check's timeout does not fail the check: the
// statement in flight proves the FE answers, and the check does not queue
// behind it (the FE runs one statement of ours at a time).
func TestDorisCheckDoesNotWaitForTheStatementInFlight(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	hold := make(chan struct{})
	fe.InjectFault(fetest.Fault{Match: "REFRESH", Hold: hold, Times: 1})
	a := newDorisFor(t, fe.URL, "", 0)
	applied := make(chan error, 1)
	go func() { applied <- a.Apply(context.Background(), ops(addP("d", "t", "p=1"))) }()
	await := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	await("the REFRESH to reach the FE", func() bool { return len(fe.Statements()) == 1 })
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := a.Check(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Check while a REFRESH is in flight: %v", err)
		}
	}
	if got := fe.Statements(); len(got) != 1 || fe.Overlaps() != 0 {
		t.Errorf("the checks sent %q (overlaps %d) while the REFRESH was in flight; want nothing sent", got[1:], fe.Overlaps())
	}
	close(hold)
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	// With nothing in flight the check asks the FE again.
	if err := a.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := fe.Statements(); got[len(got)-1] != "SELECT 1" {
		t.Errorf("Check with nothing in flight sent %q, want SELECT 1 last", got)
	}
}

// TestDorisErrorNamesTheRefusedStatementsObject has the FE refuse one
// statement: the *Error names the table or database it concerns, and nothing
// for a catalog statement.
func TestDorisErrorNamesTheRefusedStatementsObject(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	a := newDorisFor(t, fe.URL, "", 0)
	cases := []struct {
		name  string
		fault fetest.Fault
		b     change.Batch
		want  []change.Object
	}{
		{"a table refresh", fetest.Fault{RejectTable: "d.bad", Times: 1},
			ops(addP("d", "good", "p=1"), addP("d", "bad", "p=1"), addP("d", "after", "p=1")), []change.Object{{DB: "d", Table: "bad"}}},
		{"a database heal", fetest.Fault{RejectTable: "d", Times: 1},
			ops(refreshDB("d"), addP("e", "t", "p=1")), []change.Object{{DB: "d"}}},
		{"a name-list refresh", fetest.Fault{RejectTable: "d", Times: 1},
			ops(reg("d", "t")), []change.Object{{DB: "d"}}},
		{"a catalog statement", fetest.Fault{Match: "REFRESH CATALOG", Code: 1, Message: "errCode = 2, detailMessage = bad", Times: 1},
			ops(regDB("x")), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fe.InjectFault(c.fault)
			before := len(fe.Statements())
			err := a.Apply(context.Background(), c.b)
			checkClass(t, err, ptr(Deterministic))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%v is not an *Error", err)
			}
			if !reflect.DeepEqual(e.Objects, c.want) {
				t.Fatalf("objects of %v: %v, want %v", err, e.Objects, c.want)
			}
			// Apply stops at the refused statement.
			if got := fe.Statements()[before:]; got[len(got)-1] != e.Statement {
				t.Errorf("statements after the refused one were sent: %q", got)
			}
		})
	}
}
