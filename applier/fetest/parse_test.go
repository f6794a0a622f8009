package fetest

import (
	"reflect"
	"testing"
)

func TestParseStatementAccepts(t *testing.T) {
	cases := []struct {
		sql  string
		want Statement
	}{
		{"REFRESH CATALOG `hive`", Statement{Kind: RefreshCatalog, Catalog: "hive"}},
		{"refresh catalog hive", Statement{Kind: RefreshCatalog, Catalog: "hive"}},
		{`REFRESH CATALOG hive PROPERTIES("invalid_cache"="false")`,
			Statement{Kind: RefreshCatalog, Catalog: "hive", Properties: map[string]string{"invalid_cache": "false"}}},
		{`REFRESH CATALOG hive properties ( 'invalid_cache' = 'TRUE' );`,
			Statement{Kind: RefreshCatalog, Catalog: "hive", Properties: map[string]string{"invalid_cache": "true"}}},
		{"REFRESH DATABASE `c`.`d`", Statement{Kind: RefreshDatabase, Catalog: "c", DB: "d"}},
		{"REFRESH DATABASE d", Statement{Kind: RefreshDatabase, DB: "d"}},
		{"REFRESH TABLE `c`.`d`.`t`", Statement{Kind: RefreshTable, Catalog: "c", DB: "d", Table: "t"}},
		{"REFRESH TABLE d.t", Statement{Kind: RefreshTable, DB: "d", Table: "t"}},
		{"REFRESH TABLE t", Statement{Kind: RefreshTable, Table: "t"}},
		{"REFRESH TABLE `c` . `d` . `t`", Statement{Kind: RefreshTable, Catalog: "c", DB: "d", Table: "t"}},
		{"REFRESH TABLE `a``b`.`x;--y`.`\"q'\n`", Statement{Kind: RefreshTable, Catalog: "a`b", DB: "x;--y", Table: "\"q'\n"}},
		{"REFRESH TABLE `c`.`d`.`t` -- trailing comment", Statement{Kind: RefreshTable, Catalog: "c", DB: "d", Table: "t"}},
		{"/* lead */ REFRESH /* mid */ TABLE `c`.`d`.`t`", Statement{Kind: RefreshTable, Catalog: "c", DB: "d", Table: "t"}},
		{"REFRESH TABLE `select`.`d`.`日本`", Statement{Kind: RefreshTable, Catalog: "select", DB: "d", Table: "日本"}},
		{"select 1", Statement{Kind: SelectOne}},
	}
	for _, c := range cases {
		got, err := ParseStatement(c.sql)
		if err != nil {
			t.Errorf("%q: %v", c.sql, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got  %+v\n want %+v", c.sql, got, c.want)
		}
	}
}

func TestParseStatementRejects(t *testing.T) {
	for _, sql := range []string{
		"",
		"DROP TABLE `c`.`d`.`t`",
		"REFRESH",
		"REFRESH VIEW `c`.`d`",
		"REFRESH CATALOG",
		"REFRESH CATALOG `c`.`d`",                 // a catalog name has one part
		"REFRESH DATABASE `c`.`d`.`e`",            // a database name at most two
		"REFRESH TABLE `a`.`b`.`c`.`d`",           // a table name at most three
		"REFRESH TABLE `c`.`d`.`t",                // unterminated quote
		"REFRESH TABLE `c`.`d`.`t`; DROP TABLE x", // a second statement
		"REFRESH TABLE `c`.`d`.`t`;;",
		"REFRESH TABLE `c`.`d`.`t` PROPERTIES(\"invalid_cache\"=\"false\")", // not for tables
		`REFRESH CATALOG c PROPERTIES("invalid_cache"="maybe")`,
		`REFRESH CATALOG c PROPERTIES("other"="x")`,
		`REFRESH CATALOG c PROPERTIES("invalid_cache"="false"`,
		`REFRESH CATALOG c PROPERTIES(invalid_cache="false")`,
		"REFRESH TABLE ``.`d`.`t`", // empty identifier
		"REFRESH TABLE c.d-e.t",
		"REFRESH TABLE `c`.`d`.`t` /* unterminated",
		"REFRESH CATALOG properties",
		"SELECT 2",
		"SELECT * FROM t",
	} {
		if st, err := ParseStatement(sql); err == nil {
			t.Errorf("%q: parsed as %+v, want an error", sql, st)
		}
	}
}

func TestInvalidCacheDefaultsToTrue(t *testing.T) {
	st, err := ParseStatement("REFRESH DATABASE `c`.`d`")
	if err != nil {
		t.Fatal(err)
	}
	if !st.InvalidCache() {
		t.Error("invalid_cache should default to true")
	}
	st, err = ParseStatement(`REFRESH DATABASE c.d PROPERTIES("invalid_cache"="false")`)
	if err != nil {
		t.Fatal(err)
	}
	if st.InvalidCache() {
		t.Error("invalid_cache=false not honoured")
	}
}
