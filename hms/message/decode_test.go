package message

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hmssync/hmssync/change"
)

// The messages below are written by hand in Hive's layout (reference §3) so that the
// decoder is not only checked against messages from hmstest's builder.

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func tjsonDatabase(name string) string {
	return fmt.Sprintf(`{"1":{"str":%s},"2":{"str":"comment"},"3":{"str":"hdfs://nn/warehouse/%s.db"},"4":{"map":["str","str",0,{}]},"8":{"str":"hive"}}`, quote(name), name)
}

func tjsonTable(db, name string, view bool, keys ...string) string {
	var fs []string
	for _, k := range keys {
		fs = append(fs, fmt.Sprintf(`{"1":{"str":%s},"2":{"str":"string"}}`, quote(k)))
	}
	t := fmt.Sprintf(`{"1":{"str":%s},"2":{"str":%s},"3":{"str":"hive"},"4":{"i32":1616068620},"7":{"rec":{"1":{"lst":["rec",1,{"1":{"str":"id"},"2":{"str":"int"}}]},"2":{"str":"hdfs://x"}}},"8":{"lst":["rec",%d%s]},"9":{"map":["str","str",1,{"k":"v"}]}`,
		quote(name), quote(db), len(keys), prefixComma(strings.Join(fs, ",")))
	if view {
		t += `,"10":{"str":"select 1"},"11":{"str":"select 1"},"12":{"str":"VIRTUAL_VIEW"}`
	} else {
		t += `,"12":{"str":"MANAGED_TABLE"}`
	}
	return t + `,"17":{"str":"hive"}}`
}

func tjsonPartition(db, table string, values ...string) string {
	var vs []string
	for _, v := range values {
		vs = append(vs, quote(v))
	}
	return fmt.Sprintf(`{"1":{"lst":["str",%d%s]},"2":{"str":%s},"3":{"str":%s},"4":{"i32":1},"7":{"map":["str","str",1,{"numFiles":"1"}]},"9":{"str":"hive"}}`,
		len(values), prefixComma(strings.Join(vs, ",")), quote(db), quote(table))
}

func prefixComma(s string) string {
	if s == "" {
		return ""
	}
	return "," + s
}

func gzipMessage(t testing.TB, msg string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

const head = `"server":"thrift://hms:9083","servicePrincipal":"",`

type decodeCase struct {
	name    string
	ev      Event
	catalog string
	want    []change.Descriptor
}

func decodeCases() []decodeCase {
	salesDB := tjsonDatabase("sales")
	orders := tjsonTable("sales", "orders", false, "dt", "region")
	ordersJSON := quote(orders)
	p1 := tjsonPartition("sales", "orders", "2024-01-01", "eu")
	p2 := tjsonPartition("sales", "orders", "2024-01-02", "us/west")
	ev := func(id int64, typ, db, table, msg string) Event {
		return Event{ID: id, Time: 1700000000 + int32(id), Type: typ, DB: db, Table: table, Message: msg, Catalog: "hive"}
	}
	d := func(id int64, op change.Op, db, table string, parts ...string) change.Descriptor {
		return change.Descriptor{EventID: id, Op: op, DB: db, Table: table, Partitions: parts, UpdateTime: 1700000000 + id}
	}
	rename := func(id int64, op change.Op, db, table, dbAfter, tableAfter string) change.Descriptor {
		r := d(id, op, db, table)
		r.DBAfter, r.TableAfter = dbAfter, tableAfter
		return r
	}
	return []decodeCase{
		{name: "create database",
			ev:   ev(1, "CREATE_DATABASE", "sales", "", `{`+head+`"cat":"hive","db":"sales","dbJson":`+quote(salesDB)+`,"timestamp":1}`),
			want: []change.Descriptor{d(1, change.RegisterDatabase, "sales", "")}},
		{name: "create database named only in dbJson",
			ev:   ev(2, "CREATE_DATABASE", "sales", "", `{`+head+`"db":null,"dbJson":`+quote(salesDB)+`,"timestamp":1}`),
			want: []change.Descriptor{d(2, change.RegisterDatabase, "sales", "")}},
		{name: "drop database",
			ev:   ev(3, "DROP_DATABASE", "sales", "", `{`+head+`"db":"sales","dbJson":`+quote(salesDB)+`,"timestamp":1}`),
			want: []change.Descriptor{d(3, change.UnregisterDatabase, "sales", "")}},
		{name: "alter database renames",
			ev: ev(4, "ALTER_DATABASE", "sales", "", `{`+head+`"db":"sales","dbObjBeforeJson":`+quote(salesDB)+
				`,"dbObjAfterJson":`+quote(tjsonDatabase("sales_v2"))+`,"timestamp":1}`),
			want: []change.Descriptor{rename(4, change.RenameDatabase, "sales", "", "sales_v2", "")}},
		{name: "alter database without rename",
			ev: ev(5, "ALTER_DATABASE", "sales", "", `{`+head+`"db":"sales","dbObjBeforeJson":`+quote(salesDB)+
				`,"dbObjAfterJson":`+quote(strings.Replace(salesDB, "comment", "new comment", 1))+`,"timestamp":1}`),
			want: nil},
		{name: "create table",
			ev:   ev(6, "CREATE_TABLE", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+`,"timestamp":1,"files":[]}`),
			want: []change.Descriptor{d(6, change.RegisterTable, "sales", "orders")}},
		{name: "drop table",
			ev:   ev(7, "DROP_TABLE", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+`,"timestamp":1}`),
			want: []change.Descriptor{d(7, change.UnregisterTable, "sales", "orders")}},
		{name: "alter table renames: header new, body old",
			ev: ev(8, "ALTER_TABLE", "sales", "orders_v2", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjBeforeJson":`+ordersJSON+
				`,"tableObjAfterJson":`+quote(tjsonTable("sales", "orders_v2", false, "dt", "region"))+`,"isTruncateOp":"false","timestamp":1,"writeId":0}`),
			want: []change.Descriptor{rename(8, change.RenameTable, "sales", "orders", "sales", "orders_v2")}},
		{name: "alter table moves to another database",
			ev: ev(9, "ALTER_TABLE", "archive", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjBeforeJson":`+ordersJSON+
				`,"tableObjAfterJson":`+quote(tjsonTable("archive", "orders", false, "dt", "region"))+`,"isTruncateOp":"false","timestamp":1,"writeId":0}`),
			want: []change.Descriptor{rename(9, change.RenameTable, "sales", "orders", "archive", "orders")}},
		{name: "alter table changing only the case of the name is no rename",
			ev: ev(10, "ALTER_TABLE", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjBeforeJson":`+ordersJSON+
				`,"tableObjAfterJson":`+quote(tjsonTable("Sales", "ORDERS", false, "dt", "region"))+`,"isTruncateOp":"false","timestamp":1,"writeId":0}`),
			want: []change.Descriptor{d(10, change.RefreshTable, "sales", "orders")}},
		{name: "alter table of a view recreates it",
			ev: ev(11, "ALTER_TABLE", "sales", "v", `{`+head+`"db":"sales","table":"v","tableType":"VIRTUAL_VIEW","tableObjBeforeJson":`+quote(tjsonTable("sales", "v", true))+
				`,"tableObjAfterJson":`+quote(tjsonTable("sales", "v", true))+`,"isTruncateOp":"false","timestamp":1,"writeId":0}`),
			want: []change.Descriptor{rename(11, change.RenameTable, "sales", "v", "sales", "v")}},
		{name: "alter table (truncate)",
			ev: ev(12, "ALTER_TABLE", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjBeforeJson":`+ordersJSON+
				`,"tableObjAfterJson":`+ordersJSON+`,"isTruncateOp":"true","timestamp":1,"writeId":3}`),
			want: []change.Descriptor{d(12, change.RefreshTable, "sales", "orders")}},
		{name: "add partitions: names from partitionListJson in table key order",
			ev: ev(13, "ADD_PARTITION", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+
				`,"timestamp":1,"partitions":[{"region":"eu","dt":"2024-01-01"},{"region":"us/west","dt":"2024-01-02"}],"partitionListJson":[`+quote(p1)+`,`+quote(p2)+`],"partitionFiles":[]}`),
			want: []change.Descriptor{d(13, change.AddPartitions, "sales", "orders", "dt=2024-01-01/region=eu", "dt=2024-01-02/region=us%2Fwest")}},
		{name: "add partitions without partitionListJson: maps in any order",
			ev: ev(14, "ADD_PARTITION", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+
				`,"timestamp":1,"partitions":[{"region":"eu","dt":"2024-01-01"},{"dt":"2024-01-02","region":"us/west"}]}`),
			want: []change.Descriptor{d(14, change.AddPartitions, "sales", "orders", "dt=2024-01-01/region=eu", "dt=2024-01-02/region=us%2Fwest")}},
		{name: "drop partitions: maps in any order, escaping, null value",
			ev: ev(15, "DROP_PARTITION", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+
				`,"timestamp":1,"partitions":[{"region":"a:b=c","dt":"2024-01-01"},{"region":null,"dt":"\u7edf\u8ba1"}]}`),
			want: []change.Descriptor{d(15, change.DropPartitions, "sales", "orders", "dt=2024-01-01/region=a%3Ab%3Dc", "dt=统计/region=__HIVE_DEFAULT_PARTITION__")}},
		{name: "alter partition with new values: drop then add",
			ev: ev(16, "ALTER_PARTITION", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+
				`,"isTruncateOp":"false","timestamp":1,"writeId":0,"keyValues":{"region":"eu","dt":"2024-01-01"},"partitionObjBeforeJson":`+quote(p1)+
				`,"partitionObjAfterJson":`+quote(tjsonPartition("sales", "orders", "2024-01-01", "eu-1"))+`}`),
			want: []change.Descriptor{
				d(16, change.DropPartitions, "sales", "orders", "dt=2024-01-01/region=eu"),
				d(16, change.AddPartitions, "sales", "orders", "dt=2024-01-01/region=eu-1")}},
		{name: "alter partition in place: refresh",
			ev: ev(17, "ALTER_PARTITION", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+
				`,"isTruncateOp":"false","timestamp":1,"writeId":0,"keyValues":{"region":"eu","dt":"2024-01-01"},"partitionObjBeforeJson":`+quote(p1)+
				`,"partitionObjAfterJson":`+quote(p1)+`}`),
			want: []change.Descriptor{d(17, change.RefreshPartitions, "sales", "orders", "dt=2024-01-01/region=eu")}},
		{name: "alter partitions (batch)",
			ev: ev(18, "ALTER_PARTITIONS", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+
				`,"isTruncateOp":"false","timestamp":1,"writeId":0,"partitions":[{"dt":"2024-01-01","region":"eu"},{"dt":"2024-01-02","region":"us/west"}],"partitionListJson":[`+quote(p1)+`,`+quote(p2)+`]}`),
			want: []change.Descriptor{d(18, change.RefreshPartitions, "sales", "orders", "dt=2024-01-01/region=eu", "dt=2024-01-02/region=us%2Fwest")}},
		{name: "insert into a partition",
			ev: ev(19, "INSERT", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableType":"MANAGED_TABLE","tableObjJson":`+ordersJSON+
				`,"ptnObjJson":`+quote(p2)+`,"timestamp":1,"replace":"false","files":["hdfs://x/f1"]}`),
			want: []change.Descriptor{d(19, change.RefreshPartitions, "sales", "orders", "dt=2024-01-02/region=us%2Fwest")}},
		{name: "insert into an unpartitioned table",
			ev: ev(20, "INSERT", "sales", "dim", `{`+head+`"db":"sales","table":"dim","tableType":"MANAGED_TABLE","tableObjJson":`+quote(tjsonTable("sales", "dim", false))+
				`,"ptnObjJson":null,"timestamp":1,"replace":"true","files":[]}`),
			want: []change.Descriptor{d(20, change.RefreshTable, "sales", "dim")}},
		{name: "reload of partitions",
			ev: ev(21, "RELOAD", "sales", "orders", `{"timestamp":1,`+head+`"db":"sales","table":"orders","tableObjJson":`+ordersJSON+
				`,"ptnObjJson":null,"refreshEvent":"true","partitionListJson":[`+quote(p1)+`,`+quote(p2)+`]}`),
			want: []change.Descriptor{d(21, change.RefreshPartitions, "sales", "orders", "dt=2024-01-01/region=eu", "dt=2024-01-02/region=us%2Fwest")}},
		{name: "reload of one partition",
			ev: ev(22, "RELOAD", "sales", "orders", `{"timestamp":1,`+head+`"db":"sales","table":"orders","tableObjJson":`+ordersJSON+
				`,"ptnObjJson":`+quote(p1)+`,"refreshEvent":"true"}`),
			want: []change.Descriptor{d(22, change.RefreshPartitions, "sales", "orders", "dt=2024-01-01/region=eu")}},
		{name: "reload of a table",
			ev: ev(23, "RELOAD", "sales", "orders", `{"timestamp":1,`+head+`"db":"sales","table":"orders","tableObjJson":`+ordersJSON+
				`,"ptnObjJson":null,"refreshEvent":"true","partitionListJson":[]}`),
			want: []change.Descriptor{d(23, change.RefreshTable, "sales", "orders")}},
		{name: "transaction events give nothing",
			ev:   ev(24, "OPEN_TXN", "", "", `{"txnIds":[1,2],"timestamp":1,"fromTxnId":1,"toTxnId":2,`+head[:len(head)-1]+`}`),
			want: nil},
		{name: "statistics events give nothing",
			ev:   ev(25, "UPDATE_TBL_COL_STAT_EVENT", "sales", "orders", `{}`),
			want: nil},
		{name: "another catalog gives nothing",
			ev: Event{ID: 26, Time: 1, Type: "CREATE_TABLE", DB: "sales", Table: "orders", Catalog: "spark",
				Message: `{` + head + `"db":"sales","table":"orders","tableObjJson":` + ordersJSON + `,"timestamp":1}`},
			want: nil},
		{name: "the configured catalog is decoded",
			catalog: "spark",
			ev: Event{ID: 27, Time: 1700000027, Type: "CREATE_TABLE", DB: "sales", Table: "orders", Catalog: "spark",
				Message: `{` + head + `"db":"sales","table":"orders","tableObjJson":` + ordersJSON + `,"timestamp":1}`},
			want: []change.Descriptor{d(27, change.RegisterTable, "sales", "orders")}},
		{name: "an event without catName is in every catalog",
			catalog: "spark",
			ev: Event{ID: 28, Time: 1700000028, Type: "CREATE_TABLE", DB: "sales", Table: "orders",
				Message: `{` + head + `"db":"sales","table":"orders","tableObjJson":` + ordersJSON + `,"timestamp":1}`},
			want: []change.Descriptor{d(28, change.RegisterTable, "sales", "orders")}},
		// Found against a real Hive 3.1.3 metastore: CREATE_TABLE logs the table as the
		// client spelled it ("MixedCase") while Hive stores, and later events name, the
		// lower-cased identifier. Descriptors carry names as HMS stores them.
		{name: "identifiers are lower-cased as Hive stores them",
			ev: ev(29, "CREATE_TABLE", "Sales", "MixedCase", `{`+head+`"db":"Sales","table":"MixedCase","tableObjJson":`+
				quote(tjsonTable("Sales", "MixedCase", false))+`,"timestamp":1}`),
			want: []change.Descriptor{d(29, change.RegisterTable, "sales", "mixedcase")}},
		{name: "a rename to a mixed-case name is lower-cased on both sides",
			ev: ev(30, "ALTER_TABLE", "Sales", "NewName", `{`+head+`"db":"Sales","table":"Orders","tableObjBeforeJson":`+
				quote(tjsonTable("Sales", "Orders", false))+`,"tableObjAfterJson":`+quote(tjsonTable("Sales", "NewName", false))+`,"timestamp":1}`),
			want: []change.Descriptor{rename(30, change.RenameTable, "sales", "orders", "sales", "newname")}},
		// FileUtils.makePartName lower-cases the partition keys (not the values).
		{name: "partition keys are lower-cased in partition names, values are not",
			ev: ev(31, "ADD_PARTITION", "sales", "orders", `{`+head+`"db":"sales","table":"orders","tableObjJson":`+
				quote(tjsonTable("sales", "orders", false, "Dt", "REGION"))+`,"timestamp":1,"partitions":[{"Dt":"2024-01-01","REGION":"EU"}],"partitionListJson":[`+
				quote(tjsonPartition("sales", "orders", "2024-01-01", "EU"))+`]}`),
			want: []change.Descriptor{d(31, change.AddPartitions, "sales", "orders", "dt=2024-01-01/region=EU")}},
		// Hive 4's compaction commit: the cleaner deletes the directories a
		// cached file listing points at (reference §3, §5).
		{name: "compaction of a table",
			ev:   ev(32, "COMMIT_COMPACTION_EVENT", "", "", `{"txnid":50,"compactionId":3,"type":"MAJOR","dbname":"sales","tableName":"orders","partName":null,`+head+`"timestamp":1}`),
			want: []change.Descriptor{d(32, change.RefreshTable, "sales", "orders")}},
		{name: "compaction of a partition",
			ev:   ev(33, "COMMIT_COMPACTION_EVENT", "", "", `{"txnid":51,"compactionId":4,"type":"MINOR","dbname":"sales","tableName":"orders","partName":"dt=2024-01-01/region=eu",`+head+`"timestamp":1}`),
			want: []change.Descriptor{d(33, change.RefreshPartitions, "sales", "orders", "dt=2024-01-01/region=eu")}},
	}
}

func TestDecodeEventTypes(t *testing.T) {
	for _, c := range decodeCases() {
		for _, format := range []string{FormatJSON, FormatGzip, ""} {
			ev := c.ev
			ev.Format = format
			if format != FormatJSON {
				// An empty format with a gzip body is gzip (reference §3).
				ev.Message = gzipMessage(t, ev.Message)
			}
			got, err := Decoder{Catalog: c.catalog}.Decode(ev)
			if err != nil {
				t.Errorf("%s (%q): %v", c.name, format, err)
				continue
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s (%q):\n got %+v\nwant %+v", c.name, format, got, c.want)
			}
		}
	}
}

func TestDecodeRealCorpus(t *testing.T) {
	// Expected descriptors derived by hand from reference §4–§5 and the corpus
	// README: the HDP sequence on tmp_db.notification_test (day key), the Doris
	// fixture (pday key, values unchanged by the alter) and a transaction event.
	want := map[int64][]change.Descriptor{
		101: {{EventID: 101, Op: change.RegisterTable, DB: "tmp_db", Table: "notification_test", UpdateTime: 1616068620}},
		102: {{EventID: 102, Op: change.AddPartitions, DB: "tmp_db", Table: "notification_test", Partitions: []string{"day=2021-03-18"}, UpdateTime: 1616070330}},
		103: {{EventID: 103, Op: change.RefreshTable, DB: "tmp_db", Table: "notification_test", UpdateTime: 1616070641}},
		104: {{EventID: 104, Op: change.DropPartitions, DB: "tmp_db", Table: "notification_test", Partitions: []string{"day=2021-03-17"}, UpdateTime: 1616071104}},
		105: {{EventID: 105, Op: change.RefreshPartitions, DB: "tmp_db", Table: "notification_test", Partitions: []string{"day=2021-03-18"}, UpdateTime: 1616071558}},
		106: {{EventID: 106, Op: change.UnregisterTable, DB: "tmp_db", Table: "notification_test", UpdateTime: 1616071666}},
		107: {{EventID: 107, Op: change.RefreshPartitions, DB: "fin_ads_online", Table: "ads_p_u_behavior_record_ice_statistics_pdi", Partitions: []string{"pday=20230131"}, UpdateTime: 1678434745}},
		108: nil,
	}
	evs := realCorpus(t)
	if len(evs) != len(want) {
		t.Fatalf("corpus has %d events, want %d", len(evs), len(want))
	}
	for _, ev := range evs {
		got, err := Decoder{}.Decode(ev)
		if err != nil {
			t.Errorf("event %d: %v", ev.ID, err)
			continue
		}
		if !reflect.DeepEqual(got, want[ev.ID]) {
			t.Errorf("event %d:\n got %+v\nwant %+v", ev.ID, got, want[ev.ID])
		}
	}
}

// realCorpusPath is a copy of the shared corpus of real events (testdata/README.md).
const realCorpusPath = "testdata/real.jsonl"

func realCorpus(t testing.TB) []Event {
	t.Helper()
	f, err := os.Open(realCorpusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("corpus line %d: %v", len(evs)+1, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestDecodeMalformed(t *testing.T) {
	table := quote(tjsonTable("sales", "orders", false, "dt"))
	cases := []struct {
		name   string
		ev     Event
		reason string // expected in the error text
	}{
		{"truncated JSON", Event{Type: "CREATE_TABLE", Format: FormatJSON, Message: `{"db":"sales","table":"or`}, "malformed message JSON"},
		{"not JSON", Event{Type: "CREATE_TABLE", Format: FormatJSON, Message: `hello`}, "malformed message JSON"},
		{"trailing garbage", Event{Type: "CREATE_TABLE", Format: FormatJSON, Message: `{"db":"a","table":"b"} x`}, "malformed message JSON"},
		{"db not a string", Event{Type: "CREATE_TABLE", Format: FormatJSON, Message: `{"db":1,"table":"b"}`}, `field "db"`},
		{"bad base64", Event{Type: "CREATE_TABLE", Format: FormatGzip, Message: `H4sI!!!!`}, "not valid base64"},
		{"base64 but not gzip", Event{Type: "CREATE_TABLE", Format: FormatGzip, Message: base64.StdEncoding.EncodeToString([]byte(`{"db":"a"}`))}, "not valid gzip"},
		{"truncated gzip", Event{Type: "CREATE_TABLE", Format: FormatGzip, Message: truncatedGzip(t, `{"db":"sales","table":"orders"}`)}, "not valid gzip"},
		{"unknown format", Event{Type: "CREATE_TABLE", Format: "avro-1", Message: `{}`}, "unsupported messageFormat"},
		{"no table names", Event{Type: "CREATE_TABLE", Format: FormatJSON, Message: `{"db":"sales"}`}, "no db and table"},
		{"add partition without table object", Event{Type: "ADD_PARTITION", Format: FormatJSON, Message: `{"db":"sales","table":"orders","partitions":[{"dt":"1"}]}`}, "no tableObjJson"},
		{"partition key not in table", Event{Type: "DROP_PARTITION", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":` + table + `,"partitions":[{"day":"1"}]}`}, `key "day"`},
		{"partition missing a key", Event{Type: "DROP_PARTITION", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":` + quote(tjsonTable("sales", "orders", false, "dt", "h")) + `,"partitions":[{"dt":"1"}]}`}, "gives 1 of the table's 2"},
		{"broken TJSON", Event{Type: "ADD_PARTITION", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":"{\"1\":{\"str\":","partitions":[{"dt":"1"}]}`}, "tableObjJson"},
		{"wrong TJSON type", Event{Type: "ADD_PARTITION", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":"{\"8\":{\"str\":\"x\"}}","partitions":[{"dt":"1"}]}`}, `want a "lst" value`},
		{"list count mismatch", Event{Type: "ADD_PARTITION", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":"{\"8\":{\"lst\":[\"rec\",2,{\"1\":{\"str\":\"dt\"}}]}}","partitions":[{"dt":"1"}]}`}, "declares 2 elements"},
		{"partition values do not fit keys", Event{Type: "INSERT", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":` + table + `,"ptnObjJson":` + quote(tjsonPartition("sales", "orders", "1", "2")) + `}`}, "2 values for 1 partition keys"},
		{"alter table without after object", Event{Type: "ALTER_TABLE", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjBeforeJson":` + table + `}`}, "no tableObjAfterJson"},
		{"bad escape", Event{Type: "CREATE_TABLE", Format: FormatJSON, Message: `{"db":"sa\qles","table":"orders"}`}, "unknown escape"},
		{"empty partitions", Event{Type: "ADD_PARTITION", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":` + table + `,"partitions":[]}`}, "no partitions"},
		// Names that are not UTF-8 must not reach an FE altered (U+FFFD).
		{"db not UTF-8", Event{Type: "CREATE_TABLE", Format: FormatJSON, Message: "{\"db\":\"s\xffx\",\"table\":\"orders\"}"}, "not valid UTF-8"},
		{"table not UTF-8", Event{Type: "DROP_TABLE", Format: FormatJSON, Message: "{\"db\":\"sales\",\"table\":\"o\xc3\"}"}, "not valid UTF-8"},
		{"rename target not UTF-8", Event{Type: "ALTER_TABLE", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjBeforeJson":` + table + `,"tableObjAfterJson":` + rawQuote(strings.Replace(tjsonTable("sales", "oXrders", false, "dt"), "X", "\xff", 1)) + `}`}, "not valid UTF-8"},
		{"partition value not UTF-8", Event{Type: "DROP_PARTITION", Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":` + table + `,"partitions":[{"dt":"2024` + "\xff" + `"}]}`}, "not valid UTF-8"},
	}
	for i, c := range cases {
		c.ev.ID = int64(1000 + i)
		got, err := Decoder{}.Decode(c.ev)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: got %v, %v; want a *DecodeError", c.name, got, err)
			continue
		}
		if de.EventID != c.ev.ID || de.EventType != c.ev.Type {
			t.Errorf("%s: error names event %d (%s), want %d (%s)", c.name, de.EventID, de.EventType, c.ev.ID, c.ev.Type)
		}
		if !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.reason)
		}
	}
}

// rawQuote is a JSON string of s that keeps bytes that are not UTF-8 (quote
// would replace them with U+FFFD, as encoding/json does).
func rawQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func truncatedGzip(t *testing.T, msg string) string {
	b, _ := base64.StdEncoding.DecodeString(gzipMessage(t, msg))
	return base64.StdEncoding.EncodeToString(b[:len(b)-6])
}

// A decode error quotes what the message holds; from a hostile message that can
// be megabytes, so its text is bounded (it is logged and shown in /status).
func TestDecodeErrorTextIsBounded(t *testing.T) {
	ev := Event{ID: 77, Type: "CREATE_TABLE", Format: "x" + strings.Repeat("y", 1<<20), Message: "{}"}
	_, err := Decoder{}.Decode(ev)
	if err == nil || len(err.Error()) > 1200 || !strings.HasPrefix(err.Error(), "event 77 (CREATE_TABLE)") {
		t.Fatalf("decode error of %d bytes: %.200q; want at most about 1 KiB, naming the event", len(err.Error()), err)
	}
}
