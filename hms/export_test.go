package hms

import (
	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/hms/message"
)

// ThriftEvent is the wire form of e, for the tests that build metastore replies
// by hand: the encoding the fake metastore uses (hmstest's thriftEvent), which
// is not hms's API, since hms only ever reads events.
func ThriftEvent(e message.Event) *hmsthrift.NotificationEvent {
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
