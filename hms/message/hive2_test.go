package message

import (
	"reflect"
	"testing"

	"github.com/hmssync/hmssync/change"
)

// Hive 2.3's INSERT message (as a real 2.3.10 metastore with DbNotificationListener writes it,
// from the real-metastore suite) has no table or partition object: the partition is named only
// by a key→value map, partKeyVals, whose order a JSON object does not promise (reference §4).
// The decoder does not build a partition name from it: it refreshes the table, which holds the
// partition. Events of Hive 2.x have no catName; messageFormat may be missing (json-0.2).
func TestHive2Insert(t *testing.T) {
	partitioned := Event{ID: 18, Time: 1796421467, Type: "INSERT", DB: "e2e_json_a", Table: "sales", Format: "json-0.2",
		Message: `{"server":"","servicePrincipal":"","db":"e2e_json_a","table":"sales","timestamp":1796421467,` +
			`"files":["file:/w/e2e_json_a/sales/data-1.txt#0"],"partKeyVals":{"dt":"2024-01-03","region":"日本"}}`}
	unpartitioned := Event{ID: 5, Time: 1796421459, Type: "INSERT", DB: "e2e_json_a", Table: "plain",
		Message: `{"server":"","servicePrincipal":"","db":"e2e_json_a","table":"plain","timestamp":1796421459,` +
			`"files":["file:/w/e2e_json_a/plain/data-2.txt#0"],"partKeyVals":{}}`}
	for _, ev := range []Event{partitioned, unpartitioned} {
		got, err := NewDecoder("hive").Decode(ev)
		want := []change.Descriptor{{EventID: ev.ID, Op: change.RefreshTable, DB: ev.DB, Table: ev.Table, UpdateTime: int64(ev.Time)}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("event %d: %+v, %v; want %+v", ev.ID, got, err, want)
		}
	}
}
