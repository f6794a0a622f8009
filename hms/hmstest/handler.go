package hmstest

import (
	"context"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/hms/message"
)

// Version is what the fake reports as its metastore version (fb303 getVersion).
const Version = "3.1.3-hmstest"

// handler implements the metastore methods for the generated processor.
type handler struct{ s *Server }

func (h handler) GetVersion(context.Context) (string, error) { return Version, nil }

func (h handler) GetStatus(context.Context) (hmsthrift.FbStatus, error) {
	return hmsthrift.FbStatus_ALIVE, nil
}

func (h handler) GetAllDatabases(context.Context) ([]string, error) {
	return h.s.Databases(), nil
}

func (h handler) SetUgi(ctx context.Context, user string, groups []string) ([]string, error) {
	connOf(ctx).setUser(user)
	return groups, nil
}

func (h handler) GetNextNotification(ctx context.Context, r *hmsthrift.NotificationEventRequest) (*hmsthrift.NotificationEventResponse, error) {
	skip := r.EventTypeSkipList
	if h.s.ignoresSkipList() {
		skip = nil // as servers older than Hive 3 do: they do not know the field
	}
	evs := h.s.log.served(r.LastEvent, int(r.GetMaxEvents()), skip, r.CatName, r.DbName, r.TableNames)
	if repeatRequested(ctx) {
		evs = h.s.log.withDuplicates(r.LastEvent, evs)
	}
	resp := &hmsthrift.NotificationEventResponse{Events: make([]*hmsthrift.NotificationEvent, len(evs))}
	highest := r.LastEvent
	bytes := 0
	for i, e := range evs {
		resp.Events[i] = thriftEvent(e)
		highest = max(highest, e.ID)
		bytes += len(e.Message)
	}
	h.s.recordFetch(ServedFetch{User: connOf(ctx).userName(), After: r.LastEvent, Max: int(r.GetMaxEvents()), DB: r.GetDbName(),
		Events: len(evs), MessageBytes: bytes, Highest: highest})
	return resp, nil
}

func (h handler) GetMetastoreDbUUID(context.Context) (string, error) {
	uuid := h.s.MetastoreUUID()
	if uuid == "" {
		return "", &hmsthrift.MetaException{Message: "hmstest: this metastore offers no db uuid"}
	}
	return uuid, nil
}

func (h handler) GetCurrentNotificationEventId(context.Context) (*hmsthrift.CurrentNotificationEventId, error) {
	return &hmsthrift.CurrentNotificationEventId{EventId: h.s.CurrentEventID()}, nil
}

func (h handler) GetNotificationEventsCount(_ context.Context, r *hmsthrift.NotificationEventsCountRequest) (*hmsthrift.NotificationEventsCountResponse, error) {
	evs := h.s.log.after(r.FromEventId, 0, r.GetCatName(), r.DbName)
	n := int64(0)
	for _, e := range evs {
		if r.IsSetToEventId() && e.ID > r.GetToEventId() {
			break
		}
		if r.IsSetLimit() && n == r.GetLimit() {
			break
		}
		n++
	}
	return &hmsthrift.NotificationEventsCountResponse{EventsCount: n}, nil
}

// thriftEvent converts e to the wire struct; empty optional fields are left
// unset, as a metastore that has no value for them sends them.
func thriftEvent(e message.Event) *hmsthrift.NotificationEvent {
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
