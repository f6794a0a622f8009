package hmstest

import (
	"compress/gzip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hmssync/hmssync/hms/message"
)

// Format chooses how the mutations encode messages.
type Format int

const (
	// FormatMixed alternates by event id: odd ids json-0.2, even ids
	// gzip(json-2.0), so every consumer sees both encodings. The default.
	FormatMixed Format = iota
	// FormatJSON writes json-0.2 (Hive 3's default).
	FormatJSON
	// FormatGzip writes gzip(json-2.0) (Hive 4's default).
	FormatGzip
)

// eventLog is the notification log: events ascending by id, the next id to
// allocate, and the settings for new messages. It has its own lock so that the
// Thrift handlers never wait for a mutation building messages.
type eventLog struct {
	mu     sync.Mutex
	events []message.Event
	next   int64 // the id the next event gets
	format Format
	now    func() time.Time
	gz     *gzip.Writer // reused: a new writer costs more than compressing a message
	// uuid is the metastore's db uuid ("" none), ignoreSkip whether requests'
	// skip lists are ignored, ignoreFilters their catalog, database and table
	// names (identity.go).
	uuid                      string
	ignoreSkip, ignoreFilters bool
	// maxResponse caps get_next_notification's answers (0: no cap), as
	// Hive's hive.metastore.max.event.response does.
	maxResponse int
}

func newEventLog() eventLog {
	return eventLog{next: 1, now: time.Now, uuid: newUUID()}
}

// Append adds events with new consecutive ids, keeping every other field
// verbatim, and returns the first and last id given (0, 0 for no events).
func (s *Server) Append(evs ...message.Event) (first, last int64) {
	l := &s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(evs) == 0 {
		return 0, 0
	}
	first = l.next
	for _, e := range evs {
		e.ID = l.next
		l.next++
		l.events = append(l.events, e)
	}
	return first, l.next - 1
}

// CurrentEventID is the id of the newest event ever allocated
// (get_current_notificationEventId); cleaning does not lower it.
func (s *Server) CurrentEventID() int64 {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.next - 1
}

// OldestEventID is the id of the oldest event kept, 0 when the log is empty.
func (s *Server) OldestEventID() int64 {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	if len(s.log.events) == 0 {
		return 0
	}
	return s.log.events[0].ID
}

// Events returns a copy of the events kept, ascending.
func (s *Server) Events() []message.Event {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return append([]message.Event(nil), s.log.events...)
}

// Clean drops the events with ids below before, as the metastore's cleaner does
// with events older than their time to live: a consumer behind them sees a gap.
func (s *Server) Clean(before int64) {
	l := &s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].ID >= before })
	l.events = append([]message.Event(nil), l.events[i:]...)
}

// Reset empties the log and makes next the id the next event gets, as when a
// metastore's database is replaced; next may be below a consumer's cursor. The
// log gets a new db uuid (unless the server offers none), and open
// connections are dropped, since a metastore serves another database only after
// a restart. The object model is kept: only the log restarts.
func (s *Server) Reset(next int64) {
	l := &s.log
	l.mu.Lock()
	if next < 1 {
		next = 1
	}
	l.events = nil
	l.next = next
	if l.uuid != "" {
		l.uuid = newUUID()
	}
	l.mu.Unlock()
	s.DropConnections()
}

// SetFormat changes the encoding of the messages that mutations write from now on.
func (s *Server) SetFormat(f Format) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.format = f
}

// after returns up to max events with ids above id and, when set, of catalog
// (events without one count as of every catalog) and database db: the events
// get_notification_events_count counts and the control API lists.
// get_next_notification filters as Hive does instead (served).
func (l *eventLog) after(id int64, max int, catalog, db string) []message.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].ID > id })
	var out []message.Event
	for _, e := range l.events[i:] {
		if max > 0 && len(out) == max {
			break
		}
		if (catalog != "" && e.Catalog != "" && e.Catalog != catalog) || (db != "" && e.DB != db) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// served returns what Hive 4's get_next_notification returns (ObjectStore
// getNextNotification): up to max events with ids above id, leaving out the
// skipped types and, when the request sets them, the events whose header
// catName, dbName or tableName differ from the request's trimmed, lower-cased
// names. Headers are compared as stored, so an event without a dbName never
// matches a dbName filter.
func (l *eventLog) served(id int64, max int, skip []string, catalog, db *string, tables []string) []message.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ignoreFilters {
		catalog, db, tables = nil, nil, nil
	}
	if l.maxResponse > 0 && (max <= 0 || max >= l.maxResponse) {
		max = l.maxResponse // Hive: the request's maxEvents if positive and below the cap, else the cap
	}
	norm := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	var tableNames []string
	for _, t := range tables {
		tableNames = append(tableNames, norm(t))
	}
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].ID > id })
	var out []message.Event
	for _, e := range l.events[i:] {
		if max > 0 && len(out) == max {
			break
		}
		if contains(skip, e.Type) ||
			(catalog != nil && e.Catalog != norm(*catalog)) ||
			(db != nil && e.DB != norm(*db)) ||
			(len(tableNames) > 0 && !contains(tableNames, e.Table)) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// withDuplicates returns evs with each event twice, preceded by the event with id
// after if it is kept: what a metastore with duplicate ids would return.
func (l *eventLog) withDuplicates(after int64, evs []message.Event) []message.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []message.Event
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].ID >= after })
	if i < len(l.events) && l.events[i].ID == after {
		out = append(out, l.events[i])
	}
	for _, e := range evs {
		out = append(out, e, e)
	}
	return out
}
