package applier

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/change"
)

var hostileNames = []string{
	"plain", "`", "``", "a`b", "`; DROP DATABASE x; --", "x` PROPERTIES(\"invalid_cache\"=\"true\")",
	"new\nline", "tab\there", "-- comment", "/* c */", "'single'", "\"double\"", "back\\slash",
	"semi;colon", "dot.ted", "spa ce", "日本語", "emoji😀", "\u0000nul", "\u202eRTL", "select",
}

// parsedNames parses stmt with the fake FE's grammar and returns the names it
// addresses.
func parsedNames(t testing.TB, stmt string) fetest.Statement {
	t.Helper()
	st, err := fetest.ParseStatement(stmt)
	if err != nil {
		t.Fatalf("the FE grammar rejects %q: %v", stmt, err)
	}
	return st
}

// checkRecovered asserts that the statements for a batch registering db.table
// (then renaming it to db2.table2) address exactly those names.
func checkRecovered(t testing.TB, catalog, db, table, db2, table2 string) {
	t.Helper()
	b := change.Batch{Catalog: catalog, Changes: []change.Descriptor{
		{EventID: 1, Op: change.RegisterTable, DB: db, Table: table},
		{EventID: 2, Op: change.AddPartitions, DB: db2, Table: table2, Partitions: []string{"p=1"}},
	}}
	want := []fetest.Statement{
		{Kind: fetest.RefreshDatabase, Catalog: catalog, DB: db},
		{Kind: fetest.RefreshTable, Catalog: catalog, DB: db, Table: table},
		{Kind: fetest.RefreshTable, Catalog: catalog, DB: db2, Table: table2},
	}
	if db == db2 && table == table2 {
		want = want[:2] // one table: one REFRESH TABLE
	}
	stmts := DorisStatements(catalog, b)
	if len(stmts) != len(want) {
		t.Fatalf("want %d statements, got %q", len(want), stmts)
	}
	for i, s := range stmts {
		got := parsedNames(t, s)
		if got.Kind != want[i].Kind || got.Catalog != want[i].Catalog || got.DB != want[i].DB || got.Table != want[i].Table {
			t.Fatalf("%q parsed as %+v, want %+v", s, got, want[i])
		}
		if got.Kind == fetest.RefreshDatabase && got.InvalidCache() {
			t.Fatalf("%q lost its invalid_cache=false", s)
		}
	}
}

func TestHostileNamesKeepTheirMeaning(t *testing.T) {
	for _, a := range hostileNames {
		for _, b := range hostileNames {
			checkRecovered(t, a, b, a+b, b, a)
		}
	}
}

// TestHostileNamesReachTheFE sends statements with hostile names through the
// real applier and the fake FE's HTTP endpoint, and checks what the FE parsed.
func TestHostileNamesReachTheFE(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	a, err := New(Config{Dialect: DialectDoris, URL: fe.URL, User: "root"})
	if err != nil {
		t.Fatal(err)
	}
	var want []fetest.Statement
	for i, n := range hostileNames {
		b := change.Batch{Catalog: n, From: int64(i), To: int64(i + 1), Changes: []change.Descriptor{
			{EventID: int64(i + 1), Op: change.RefreshTable, DB: n + "_db", Table: "t" + n},
		}}
		if err := a.Apply(context.Background(), b); err != nil {
			t.Fatalf("%q: %v", n, err)
		}
		want = append(want, fetest.Statement{Kind: fetest.RefreshTable, Catalog: n, DB: n + "_db", Table: "t" + n})
	}
	got := fe.Statements()
	if len(got) != len(want) {
		t.Fatalf("FE received %d statements, want %d", len(got), len(want))
	}
	for i, s := range got {
		st := parsedNames(t, s)
		if st.Catalog != want[i].Catalog || st.DB != want[i].DB || st.Table != want[i].Table {
			t.Errorf("FE parsed %+v, want %+v", st, want[i])
		}
	}
}

func FuzzQuoting(f *testing.F) {
	for i, n := range hostileNames {
		f.Add(n, hostileNames[(i+1)%len(hostileNames)], hostileNames[(i+2)%len(hostileNames)])
	}
	f.Fuzz(func(t *testing.T, catalog, db, table string) {
		for _, n := range []string{catalog, db, table} {
			if n == "" || !utf8.ValidString(n) {
				t.Skip("Apply rejects empty and non-UTF-8 names before quoting")
			}
		}
		checkRecovered(t, catalog, db, table, table, db)
	})
}
