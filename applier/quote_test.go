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

// keepCaches is the property of the name-list refreshes (SPEC §5).
var keepCaches = map[string]string{"invalid_cache": "false"}

// checkRecovered asserts that the statements for batches naming catalog,
// db.table and db2.table2 address exactly those names with exactly the
// properties SPEC §5 gives them: a table registration (REFRESH DATABASE and
// TABLE), a database registration (REFRESH CATALOG ... invalid_cache=false) and
// a full refresh (REFRESH CATALOG alone, which invalidates the caches), and the
// statements of a table heal (REFRESH TABLE) and a database heal (REFRESH
// DATABASE without properties).
func checkRecovered(t testing.TB, catalog, db, table, db2, table2 string) {
	t.Helper()
	refreshTable := func(db, table string) fetest.Statement {
		return fetest.Statement{Kind: fetest.RefreshTable, Catalog: catalog, DB: db, Table: table}
	}
	addPartitions := change.Descriptor{EventID: 2, Op: change.AddPartitions, DB: db2, Table: table2, Partitions: []string{"p=1"}}
	tables := []fetest.Statement{refreshTable(db, table), refreshTable(db2, table2)}
	if db == db2 && table == table2 {
		tables = tables[:1] // one table: one REFRESH TABLE
	}
	// A database heal is REFRESH DATABASE without properties (it invalidates
	// the caches), and covers the tables of that database.
	healDB := []fetest.Statement{{Kind: fetest.RefreshDatabase, Catalog: catalog, DB: db}}
	if db2 != db {
		healDB = append(healDB, refreshTable(db2, table2))
	}
	cases := []struct {
		what string
		b    change.Batch
		want []fetest.Statement
	}{
		{"table registration", change.Batch{Changes: []change.Descriptor{
			{EventID: 1, Op: change.RegisterTable, DB: db, Table: table}, addPartitions}},
			append([]fetest.Statement{{Kind: fetest.RefreshDatabase, Catalog: catalog, DB: db, Properties: keepCaches}}, tables...)},
		{"database registration", change.Batch{Changes: []change.Descriptor{
			{EventID: 1, Op: change.RegisterDatabase, DB: db}, addPartitions}},
			[]fetest.Statement{{Kind: fetest.RefreshCatalog, Catalog: catalog, Properties: keepCaches}, refreshTable(db2, table2)}},
		{"full refresh", change.Batch{FullRefresh: true},
			[]fetest.Statement{{Kind: fetest.RefreshCatalog, Catalog: catalog}}},
		{"table heal", change.Batch{Changes: []change.Descriptor{
			{EventID: 1, Op: change.RefreshTable, DB: db, Table: table}}},
			[]fetest.Statement{refreshTable(db, table)}},
		{"database heal", change.Batch{Changes: []change.Descriptor{
			{EventID: 1, Op: change.RefreshDatabase, DB: db}, addPartitions}},
			healDB},
	}
	for _, c := range cases {
		stmts := DorisStatements(catalog, c.b)
		if len(stmts) != len(c.want) {
			t.Fatalf("%s: want %d statements, got %q", c.what, len(c.want), stmts)
		}
		for i, s := range stmts {
			if got := parsedNames(t, s); !sameStatement(got, c.want[i]) {
				t.Fatalf("%s: %q parsed as %+v, want %+v", c.what, s, got, c.want[i])
			}
		}
	}
}

// sameStatement compares kinds, names and properties (no properties and an
// empty set are the same).
func sameStatement(a, b fetest.Statement) bool {
	if a.Kind != b.Kind || a.Catalog != b.Catalog || a.DB != b.DB || a.Table != b.Table || len(a.Properties) != len(b.Properties) {
		return false
	}
	for k, v := range b.Properties {
		if got, ok := a.Properties[k]; !ok || got != v {
			return false
		}
	}
	return true
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
		batches := []change.Batch{
			{Catalog: n, From: int64(i), To: int64(i + 1), Changes: []change.Descriptor{
				{EventID: int64(i + 1), Op: change.RefreshTable, DB: n + "_db", Table: "t" + n},
			}},
			{Catalog: n, From: int64(i), To: int64(i + 1), Changes: []change.Descriptor{
				{EventID: int64(i + 1), Op: change.RegisterDatabase, DB: n + "_db"},
			}},
			{Catalog: n, From: int64(i), To: int64(i + 1), FullRefresh: true},
			{Catalog: n, From: int64(i), To: int64(i + 1), Changes: []change.Descriptor{
				{EventID: int64(i + 1), Op: change.RefreshDatabase, DB: n + "_db"},
			}},
		}
		for _, b := range batches {
			if err := a.Apply(context.Background(), b); err != nil {
				t.Fatalf("%q: %v", n, err)
			}
		}
		want = append(want,
			fetest.Statement{Kind: fetest.RefreshTable, Catalog: n, DB: n + "_db", Table: "t" + n},
			fetest.Statement{Kind: fetest.RefreshCatalog, Catalog: n, Properties: keepCaches},
			fetest.Statement{Kind: fetest.RefreshCatalog, Catalog: n},
			fetest.Statement{Kind: fetest.RefreshDatabase, Catalog: n, DB: n + "_db"})
	}
	got := fe.Statements()
	if len(got) != len(want) {
		t.Fatalf("FE received %d statements, want %d", len(got), len(want))
	}
	for i, s := range got {
		if st := parsedNames(t, s); !sameStatement(st, want[i]) {
			t.Errorf("FE parsed %q as %+v, want %+v", s, st, want[i])
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
