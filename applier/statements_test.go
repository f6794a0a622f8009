package applier

import (
	"reflect"
	"testing"

	"github.com/hmssync/hmssync/change"
)

// The expected statements below are written by hand from SPEC §5.
const (
	catalogNames = "REFRESH CATALOG `hive` PROPERTIES(\"invalid_cache\"=\"false\")"
	dbD          = "REFRESH DATABASE `hive`.`d` PROPERTIES(\"invalid_cache\"=\"false\")"
	dbE          = "REFRESH DATABASE `hive`.`e` PROPERTIES(\"invalid_cache\"=\"false\")"
	tableDT      = "REFRESH TABLE `hive`.`d`.`t`"
	healD        = "REFRESH DATABASE `hive`.`d`"
	healE        = "REFRESH DATABASE `hive`.`e`"
)

func ops(ds ...change.Descriptor) change.Batch {
	for i := range ds {
		ds[i].EventID = int64(i + 1)
	}
	return change.Batch{Catalog: "hive", From: 0, To: int64(len(ds)), Changes: ds}
}

func regDB(db string) change.Descriptor {
	return change.Descriptor{Op: change.RegisterDatabase, DB: db}
}
func unregDB(db string) change.Descriptor {
	return change.Descriptor{Op: change.UnregisterDatabase, DB: db}
}
func renDB(db, to string) change.Descriptor {
	return change.Descriptor{Op: change.RenameDatabase, DB: db, DBAfter: to}
}
func reg(db, t string) change.Descriptor {
	return change.Descriptor{Op: change.RegisterTable, DB: db, Table: t}
}
func unreg(db, t string) change.Descriptor {
	return change.Descriptor{Op: change.UnregisterTable, DB: db, Table: t}
}
func ren(db, t, db2, t2 string) change.Descriptor {
	return change.Descriptor{Op: change.RenameTable, DB: db, Table: t, DBAfter: db2, TableAfter: t2}
}
func refreshDB(db string) change.Descriptor {
	return change.Descriptor{Op: change.RefreshDatabase, DB: db}
}
func refresh(db, t string) change.Descriptor {
	return change.Descriptor{Op: change.RefreshTable, DB: db, Table: t}
}
func addP(db, t string, p ...string) change.Descriptor {
	return change.Descriptor{Op: change.AddPartitions, DB: db, Table: t, Partitions: p}
}
func dropP(db, t string, p ...string) change.Descriptor {
	return change.Descriptor{Op: change.DropPartitions, DB: db, Table: t, Partitions: p}
}
func refreshP(db, t string, p ...string) change.Descriptor {
	return change.Descriptor{Op: change.RefreshPartitions, DB: db, Table: t, Partitions: p}
}

func TestDorisStatements(t *testing.T) {
	full := ops(addP("d", "t", "p=1"), regDB("x"))
	full.FullRefresh = true
	cases := []struct {
		name string
		b    change.Batch
		want []string
	}{
		{"empty batch", ops(), nil},
		{"full refresh dominates its batch", full, []string{"REFRESH CATALOG `hive`"}},
		{"register database", ops(regDB("d")), []string{catalogNames}},
		{"unregister database", ops(unregDB("d")), []string{catalogNames}},
		{"rename database", ops(renDB("d", "e")), []string{catalogNames}},
		{"register table", ops(reg("d", "t")), []string{dbD, tableDT}},
		{"unregister table", ops(unreg("d", "t")), []string{dbD}},
		{"rename table within a database", ops(ren("d", "a", "d", "t")), []string{dbD, tableDT}},
		{"rename table across databases", ops(ren("e", "a", "d", "t")), []string{dbE, dbD, tableDT}},
		{"refresh table", ops(refresh("d", "t")), []string{tableDT}},
		{"add partitions", ops(addP("d", "t", "p=1")), []string{tableDT}},
		{"drop partitions", ops(dropP("d", "t", "p=1")), []string{tableDT}},
		{"refresh partitions", ops(refreshP("d", "t", "p=1")), []string{tableDT}},
		{"partition ops on one table coalesce",
			ops(addP("d", "t", "p=1"), addP("d", "t", "p=2"), dropP("d", "t", "p=1"), refreshP("d", "t", "p=2"), refresh("d", "t")),
			[]string{tableDT}},
		{"drop then create", ops(unreg("d", "t"), reg("d", "t")), []string{dbD, tableDT}},
		{"create, fill, then drop", ops(reg("d", "t"), addP("d", "t", "p=1"), unreg("d", "t")), []string{dbD}},
		{"partitions of a table dropped later", ops(addP("d", "t", "p=1"), addP("d", "u", "p=1"), unreg("d", "t")),
			[]string{dbD, "REFRESH TABLE `hive`.`d`.`u`"}},
		{"rename chain", ops(ren("d", "a", "d", "b"), ren("d", "b", "e", "c")),
			[]string{dbD, dbE, "REFRESH TABLE `hive`.`e`.`c`"}},
		{"rename there and back", ops(ren("d", "t", "d", "b"), ren("d", "b", "d", "t")), []string{dbD, tableDT}},
		{"partitions then rename: refresh the new name only", ops(addP("d", "a", "p=1"), ren("d", "a", "d", "t")),
			[]string{dbD, tableDT}},
		{"table of a database dropped later", ops(addP("d", "t", "p=1"), addP("e", "u", "p=1"), unregDB("d")),
			[]string{catalogNames, "REFRESH TABLE `hive`.`e`.`u`"}},
		{"pending refresh follows a database rename", ops(addP("d", "t", "p=1"), renDB("d", "e")),
			[]string{catalogNames, "REFRESH TABLE `hive`.`e`.`t`"}},
		{"a database op replaces database refreshes", ops(regDB("n"), reg("n", "t"), unreg("d", "x"), addP("d", "t", "p=1")),
			[]string{catalogNames, "REFRESH TABLE `hive`.`n`.`t`", tableDT}},
		{"database dropped and created again keeps later tables", ops(unregDB("d"), regDB("d"), reg("d", "t")),
			[]string{catalogNames, tableDT}},
		{"first mention decides the order", ops(addP("d", "b", "p=1"), addP("d", "a", "p=1"), refresh("d", "b")),
			[]string{"REFRESH TABLE `hive`.`d`.`b`", "REFRESH TABLE `hive`.`d`.`a`"}},
		{"refresh database", ops(refreshDB("d")), []string{healD}},
		{"refresh database once per database", ops(refreshDB("d"), refreshDB("e"), refreshDB("d")), []string{healD, healE}},
		{"refresh database covers its tables and its name list",
			ops(addP("d", "t", "p=1"), reg("d", "u"), refreshDB("d"), addP("e", "u", "p=1"), refresh("d", "v")),
			[]string{healD, "REFRESH TABLE `hive`.`e`.`u`"}},
		{"refresh database beside another database's name list", ops(reg("e", "t"), refreshDB("d")),
			[]string{dbE, healD, "REFRESH TABLE `hive`.`e`.`t`"}},
		{"refresh database after a database op", ops(regDB("x"), refreshDB("d"), addP("d", "t", "p=1")),
			[]string{catalogNames, healD}},
		{"refresh database of a database dropped later", ops(refreshDB("d"), unregDB("d")), []string{catalogNames}},
		{"refresh database follows a database rename", ops(refreshDB("d"), renDB("d", "e")), []string{catalogNames, healE}},
		{"refresh database of a database created again", ops(unregDB("d"), regDB("d"), refreshDB("d")),
			[]string{catalogNames, healD}},
		{"full refresh dominates a refresh database", func() change.Batch {
			b := ops(refreshDB("d"))
			b.FullRefresh = true
			return b
		}(), []string{"REFRESH CATALOG `hive`"}},
		{"invalid descriptors are ignored", ops(change.Descriptor{Op: change.AddPartitions, DB: "d", Table: "t"}, change.Descriptor{Op: "NOPE", DB: "d"}),
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DorisStatements("hive", c.b)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got\n  %q\nwant\n  %q", got, c.want)
			}
		})
	}
}

func TestDorisStatementsQuoteHostileNames(t *testing.T) {
	b := ops(reg("d;b", "t`--\n"), addP("日本", "/*x*/ 'q\"", "p=1"))
	got := DorisStatements("c`at", b)
	want := []string{
		"REFRESH DATABASE `c``at`.`d;b` PROPERTIES(\"invalid_cache\"=\"false\")",
		"REFRESH TABLE `c``at`.`d;b`.`t``--\n`",
		"REFRESH TABLE `c``at`.`日本`.`/*x*/ 'q\"`",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %q\nwant\n  %q", got, want)
	}
	got = DorisStatements("c`at", ops(refreshDB("d`; --\n"), refresh("e`", "`t")))
	want = []string{"REFRESH DATABASE `c``at`.`d``; --\n`", "REFRESH TABLE `c``at`.`e```.```t`"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %q\nwant\n  %q", got, want)
	}
}

// TestDorisStatementObjects checks the object each statement concerns: its
// table, its database, nothing for the catalog.
func TestDorisStatementObjects(t *testing.T) {
	b := ops(reg("d", "t"), refreshDB("e"), addP("e", "u", "p=1"), addP("f", "v", "p=1"))
	got := dorisStatements("hive", b)
	want := []statement{
		{dbD, []change.Object{{DB: "d"}}},
		{healE, []change.Object{{DB: "e"}}},
		{tableDT, []change.Object{{DB: "d", Table: "t"}}},
		{"REFRESH TABLE `hive`.`f`.`v`", []change.Object{{DB: "f", Table: "v"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %+v\nwant\n  %+v", got, want)
	}
	got = dorisStatements("hive", ops(regDB("x"), addP("d", "t", "p=1")))
	want = []statement{{catalogNames, nil}, {tableDT, []change.Object{{DB: "d", Table: "t"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %+v\nwant\n  %+v", got, want)
	}
	full := ops(addP("d", "t", "p=1"))
	full.FullRefresh = true
	if got := dorisStatements("hive", full); len(got) != 1 || got[0].objects != nil {
		t.Errorf("full refresh: %+v", got)
	}
}
