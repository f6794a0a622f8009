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

// EventFromThrift converts the wire struct. Optional fields the server did not send
// become empty strings, as they are in the JSON form.
func EventFromThrift(t *hmsthrift.NotificationEvent) Event {
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

// ThriftEvent converts e to the wire struct; empty optional fields are left unset,
// as a metastore that has no value for them sends them.
func ThriftEvent(e Event) *hmsthrift.NotificationEvent {
	t := &hmsthrift.NotificationEvent{
		EventId:   e.ID,
		EventTime: e.Time,
		EventType: e.Type,
		Message:   e.Message,
	}
	if e.DB != "" {
		t.DbName = &e.DB
	}
	if e.Table != "" {
		t.TableName = &e.Table
	}
	if e.Format != "" {
		t.MessageFormat = &e.Format
	}
	if e.Catalog != "" {
		t.CatName = &e.Catalog
	}
	return t
}
