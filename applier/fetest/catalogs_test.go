package fetest

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestShowCatalogsListsInternalAndTheDeclaredOnes(t *testing.T) {
	s := NewServer(Options{Catalogs: []Catalog{
		{Name: "hive"},
		{Name: "my`jdbc", Properties: map[string]string{"type": "jdbc"}},
	}})
	defer s.Close()
	a := exec(t, s, "show catalogs;")
	mustOK(t, a, "SHOW CATALOGS")
	var rs struct {
		Type string              `json:"type"`
		Meta []map[string]string `json:"meta"`
		Data [][]string          `json:"data"`
	}
	if err := json.Unmarshal(a.Data, &rs); err != nil || rs.Type != "result_set" {
		t.Fatalf("not a result set: %s (%v)", a.Raw, err)
	}
	name, typ := -1, -1
	for i, m := range rs.Meta {
		switch m["name"] {
		case "CatalogName":
			name = i
		case "Type":
			typ = i
		}
	}
	if name < 0 || typ < 0 {
		t.Fatalf("no CatalogName or Type column in %v", rs.Meta)
	}
	got := map[string]string{}
	for _, r := range rs.Data {
		got[r[name]] = r[typ]
	}
	want := map[string]string{"internal": "internal", "hive": "hms", "my`jdbc": "jdbc"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("catalogs: got %v, want %v", got, want)
	}
}

func TestShowCreateCatalogShowsTheProperties(t *testing.T) {
	s := NewServer(Options{Catalogs: []Catalog{{Name: "hive", Properties: map[string]string{
		"type": "hms", "hive.enable_hms_events_incremental_sync": "true"}}}})
	defer s.Close()
	a := exec(t, s, "SHOW CREATE CATALOG `hive`")
	mustOK(t, a, "SHOW CREATE CATALOG")
	var rs struct {
		Data [][]string `json:"data"`
	}
	if err := json.Unmarshal(a.Data, &rs); err != nil || len(rs.Data) != 1 || len(rs.Data[0]) != 2 {
		t.Fatalf("want one row of two columns: %s", a.Raw)
	}
	ddl := rs.Data[0][1]
	for _, want := range []string{"CREATE CATALOG `hive`", `"hive.enable_hms_events_incremental_sync" = "true"`, `"type" = "hms"`} {
		if !strings.Contains(ddl, want) {
			t.Errorf("DDL %q lacks %q", ddl, want)
		}
	}
	if a := exec(t, s, "SHOW CREATE CATALOG other"); a.Code != 1 || !strings.Contains(a.text(), "Unknown catalog 'other'") {
		t.Errorf("undeclared catalog: %s", a.Raw)
	}
	// Other SHOW statements stay unsupported, as before.
	if a := exec(t, s, "SHOW DATABASES"); a.Code != 1 {
		t.Errorf("SHOW DATABASES: want code 1, got %s", a.Raw)
	}
}

func TestNativeStateOfAnUndeclaredCatalogIs404(t *testing.T) {
	get := func(s *Server, catalog string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+nativePrefix+"/catalogs/"+catalog+"/state", nil)
		req.SetBasicAuth("root", "")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	declared := NewServer(Options{Catalogs: []Catalog{{Name: "hive"}}})
	defer declared.Close()
	open := NewServer(Options{})
	defer open.Close()
	for _, c := range []struct {
		s       *Server
		catalog string
		want    int
	}{{declared, "hive", 200}, {declared, "sales", 404}, {open, "sales", 200}} {
		if got := get(c.s, c.catalog); got != c.want {
			t.Errorf("state of %s (declared %v): HTTP %d, want %d", c.catalog, c.s.catalogs, got, c.want)
		}
	}
}

// ALTER CATALOG … SET PROPERTIES changes what SHOW CREATE CATALOG shows, on
// every endpoint of a cluster; a malformed one or an unknown catalog is an
// error, and nothing changes.
func TestAlterCatalogSetsProperties(t *testing.T) {
	c := NewCluster(2, Options{Catalogs: []Catalog{{Name: "hive", Properties: map[string]string{
		"type": "hms", "hive.enable_hms_events_incremental_sync": "true"}}}})
	defer c.Close()
	ddl := func(s *Server) string {
		t.Helper()
		a := exec(t, s, "SHOW CREATE CATALOG hive")
		mustOK(t, a, "SHOW CREATE CATALOG")
		return string(a.Data)
	}
	for _, bad := range []string{
		`ALTER CATALOG other SET PROPERTIES ("hive.enable_hms_events_incremental_sync" = "false")`,
		`ALTER CATALOG hive SET PROPERTIES ("hive.enable_hms_events_incremental_sync" "false")`,
		`ALTER CATALOG hive RENAME h2`,
	} {
		if a := exec(t, c.Server(0), bad); a.Code != 1 {
			t.Errorf("%s: want code 1, got %s", bad, a.Raw)
		}
	}
	a := exec(t, c.Server(0), "ALTER CATALOG `hive` SET PROPERTIES (\"hive.enable_hms_events_incremental_sync\" = \"false\", \"k\" = \"v\");")
	mustOK(t, a, "ALTER CATALOG")
	for i := range 2 {
		got := ddl(c.Server(i))
		for _, want := range []string{`\"hive.enable_hms_events_incremental_sync\" = \"false\"`, `\"k\" = \"v\"`, `\"type\" = \"hms\"`} {
			if !strings.Contains(got, want) {
				t.Errorf("endpoint %d: DDL %s lacks %s", i, got, want)
			}
		}
	}
}
