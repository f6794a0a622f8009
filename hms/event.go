// Package hms reads a Hive Metastore's notification log over Thrift and decodes each
// event into the change descriptors of package change. Decoding uses only the event's
// message: it never calls the metastore.
package hms

import "github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"

// Event is one HMS NotificationEvent. Its JSON form is the NotificationEvent
// JSON-lines format that `hmssync events decode` reads and the fake metastore's
// control API accepts.
type Event struct {
	ID      int64  `json:"eventId"`
	Time    int32  `json:"eventTime"`
	Type    string `json:"eventType"`
	DB      string `json:"dbName,omitempty"`
	Table   string `json:"tableName,omitempty"`
	Message string `json:"message"`
	Format  string `json:"messageFormat,omitempty"`
	Catalog string `json:"catName,omitempty"`
}

// eventFromThrift converts the wire struct. Optional fields the server did not send
// become empty strings, as they are in the JSON form.
func eventFromThrift(t *hmsthrift.NotificationEvent) Event {
	return Event{
		ID:      t.EventId,
		Time:    t.EventTime,
		Type:    t.EventType,
		DB:      t.GetDbName(),
		Table:   t.GetTableName(),
		Message: t.Message,
		Format:  t.GetMessageFormat(),
		Catalog: t.GetCatName(),
	}
}
