// Package hms reads a Hive Metastore's notification log over Thrift: it
// connects and authenticates (plain, Kerberos over SASL, TLS), fetches events
// (the whole log, or a few databases of it pushed down to the metastore) and
// lists databases' tables and partitions. Package hms/message decodes the
// events it returns.
package hms

import (
	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/hms/message"
)

// eventFromThrift converts the wire struct. Optional fields the server did not send
// become empty strings, as they are in the JSON form.
func eventFromThrift(t *hmsthrift.NotificationEvent) message.Event {
	return message.Event{
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
