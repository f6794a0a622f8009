package hmstest

import (
	"context"
	"reflect"
	"testing"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/hms/message"
)

// get_next_notification filters as Hive 4.0.1's ObjectStore.getNextNotification
// (read from its bytecode): catalogName == normalize(catName), dbName ==
// normalize(dbName), tableName in normalize(tableNames), where normalize trims
// and lower-cases the request's names and the stored headers are compared as
// they are, so a header without the field never matches; IgnoreRequestFilters
// is a server that does not know those request fields.
func TestGetNextNotificationFiltersAsHive4(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Append(
		message.Event{Type: message.EventInsert, DB: "sales", Table: "orders", Catalog: "hive", Message: "{}"}, // 1
		message.Event{Type: "OPEN_TXN", Message: "{}"},                                                         // 2: no db, no catalog
		message.Event{Type: message.EventInsert, DB: "sales", Table: "items", Message: "{}"},                   // 3: no catalog
		message.Event{Type: message.EventInsert, DB: "Sales", Table: "orders", Catalog: "hive", Message: "{}"}, // 4: stored upper-case
		message.Event{Type: message.EventInsert, DB: "hr", Table: "orders", Catalog: "spark", Message: "{}"},   // 5
	)
	str := func(v string) *string { return &v }
	cases := []struct {
		name string
		req  hmsthrift.NotificationEventRequest
		want []int64
	}{
		{"none", hmsthrift.NotificationEventRequest{}, []int64{1, 2, 3, 4, 5}},
		{"db", hmsthrift.NotificationEventRequest{DbName: str(" SALES ")}, []int64{1, 3}},
		{"catalog", hmsthrift.NotificationEventRequest{CatName: str("Hive")}, []int64{1, 4}},
		{"tables", hmsthrift.NotificationEventRequest{TableNames: []string{"ORDERS"}}, []int64{1, 4, 5}},
		{"db and tables", hmsthrift.NotificationEventRequest{DbName: str("sales"), TableNames: []string{"items"}}, []int64{3}},
	}
	for _, ignore := range []bool{false, true} {
		s.IgnoreRequestFilters(ignore)
		for _, c := range cases {
			r, err := handler{s}.GetNextNotification(context.Background(), &c.req)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, e := range r.Events {
				got = append(got, e.EventId)
			}
			want := c.want
			if ignore {
				want = []int64{1, 2, 3, 4, 5}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (ignoring filters %v): %v, want %v", c.name, ignore, got, want)
			}
		}
	}
}
