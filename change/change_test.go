package change

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDescriptorJSONHasOnlyKeysThatApply(t *testing.T) {
	cases := []struct {
		d    Descriptor
		want string
	}{
		{Descriptor{EventID: 1, Op: RegisterDatabase, DB: "d", UpdateTime: 7},
			`{"event_id":1,"op":"REGISTER_DATABASE","db":"d","update_time":7}`},
		{Descriptor{EventID: 2, Op: RenameTable, DB: "d", Table: "t", DBAfter: "d2", TableAfter: "t2", UpdateTime: 8},
			`{"event_id":2,"op":"RENAME_TABLE","db":"d","table":"t","db_after":"d2","table_after":"t2","update_time":8}`},
		{Descriptor{EventID: 3, Op: AddPartitions, DB: "d", Table: "t", Partitions: []string{"p=1", "p=2"}, UpdateTime: 9},
			`{"event_id":3,"op":"ADD_PARTITIONS","db":"d","table":"t","partitions":["p=1","p=2"],"update_time":9}`},
	}
	for _, c := range cases {
		got, err := c.d.MarshalLine()
		if err != nil {
			t.Fatalf("%v: %v", c.d, err)
		}
		if string(got) != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
		var back Descriptor
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("round trip of %s: %v", got, err)
		}
		if back.Op != c.d.Op || back.EventID != c.d.EventID || len(back.Partitions) != len(c.d.Partitions) {
			t.Errorf("round trip changed %+v into %+v", c.d, back)
		}
	}
}

func TestValidate(t *testing.T) {
	good := []Descriptor{
		{Op: RegisterDatabase, DB: "d"},
		{Op: RenameDatabase, DB: "d", DBAfter: "e"},
		{Op: RefreshTable, DB: "d", Table: "t"},
		{Op: RenameTable, DB: "d", Table: "t", DBAfter: "d", TableAfter: "u"},
		{Op: DropPartitions, DB: "d", Table: "t", Partitions: []string{"p=1"}},
	}
	for _, d := range good {
		if err := d.Validate(); err != nil {
			t.Errorf("%+v: unexpected error %v", d, err)
		}
	}
	bad := []Descriptor{
		{Op: "DROP_EVERYTHING", DB: "d"},
		{Op: RegisterTable, DB: "d"},
		{Op: RenameDatabase, DB: "d"},
		{Op: RenameTable, DB: "d", Table: "t", TableAfter: "u"},
		{Op: AddPartitions, DB: "d", Table: "t"},
		{Op: RefreshTable, Table: "t"},
	}
	for _, d := range bad {
		if err := d.Validate(); err == nil {
			t.Errorf("%+v: want an error", d)
		}
	}
}

func TestBatchJSONIsTheNativeBody(t *testing.T) {
	b := Batch{Catalog: "hive", From: 4, To: 6, Changes: []Descriptor{{EventID: 5, Op: RefreshTable, DB: "d", Table: "t", UpdateTime: 1}}}
	got, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"from_event_id":4,"to_event_id":6,"full_refresh":false,"changes":[{"event_id":5,"op":"REFRESH_TABLE","db":"d","table":"t","update_time":1}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRefreshDatabaseIsADatabaseOp(t *testing.T) {
	if !RefreshDatabase.Valid() || !RefreshDatabase.DatabaseLevel() {
		t.Fatalf("%s: valid %v, database level %v", RefreshDatabase, RefreshDatabase.Valid(), RefreshDatabase.DatabaseLevel())
	}
	if err := (Descriptor{Op: RefreshDatabase, DB: "d"}).Validate(); err != nil {
		t.Errorf("REFRESH_DATABASE with a db: %v", err)
	}
	if err := (Descriptor{Op: RefreshDatabase}).Validate(); err == nil {
		t.Error("REFRESH_DATABASE without a db: want an error")
	}
	got, err := Descriptor{EventID: 4, Op: RefreshDatabase, DB: "d", UpdateTime: 1}.MarshalLine()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"event_id":4,"op":"REFRESH_DATABASE","db":"d","update_time":1}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestObjects(t *testing.T) {
	dt := Object{DB: "d", Table: "t"}
	cases := []struct {
		d    Descriptor
		want []Object
	}{
		{Descriptor{Op: RegisterDatabase, DB: "d"}, []Object{{DB: "d"}}},
		{Descriptor{Op: UnregisterDatabase, DB: "d"}, []Object{{DB: "d"}}},
		{Descriptor{Op: RefreshDatabase, DB: "d"}, []Object{{DB: "d"}}},
		{Descriptor{Op: RenameDatabase, DB: "d", DBAfter: "e"}, []Object{{DB: "d"}, {DB: "e"}}},
		{Descriptor{Op: RegisterTable, DB: "d", Table: "t"}, []Object{dt}},
		{Descriptor{Op: UnregisterTable, DB: "d", Table: "t"}, []Object{dt}},
		{Descriptor{Op: RefreshTable, DB: "d", Table: "t"}, []Object{dt}},
		{Descriptor{Op: AddPartitions, DB: "d", Table: "t", Partitions: []string{"p=1"}}, []Object{dt}},
		{Descriptor{Op: DropPartitions, DB: "d", Table: "t", Partitions: []string{"p=1"}}, []Object{dt}},
		{Descriptor{Op: RefreshPartitions, DB: "d", Table: "t", Partitions: []string{"p=1"}}, []Object{dt}},
		{Descriptor{Op: RenameTable, DB: "d", Table: "t", DBAfter: "e", TableAfter: "u"}, []Object{dt, {DB: "e", Table: "u"}}},
		{Descriptor{Op: RenameTable, DB: "d", Table: "t", DBAfter: "d", TableAfter: "t"}, []Object{dt}},
		{Descriptor{Op: "NOPE", DB: "d", Table: "t"}, nil},
	}
	for _, c := range cases {
		if got := c.d.Objects(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: got %v, want %v", c.d, got, c.want)
		}
	}
	for _, op := range Ops {
		if got := (Descriptor{Op: op, DB: "d", Table: "t", DBAfter: "e", TableAfter: "u"}).Objects(); len(got) == 0 {
			t.Errorf("%s concerns no object", op)
		}
	}
	if s := dt.String(); s != "d.t" {
		t.Errorf("String: %q", s)
	}
	if s := (Object{DB: "d"}).String(); s != "d" {
		t.Errorf("String: %q", s)
	}
}
