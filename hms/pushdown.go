package hms

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/hms/message"
)

// Reading a few databases of the log (push-down). Hive 4.0.1's
// get_next_notification (HMSHandler passes the request to
// ObjectStore.getNextNotification, read from its bytecode) adds to its JDOQL
// filter `catalogName == normalizeIdentifier(catName)`, `dbName ==
// normalizeIdentifier(dbName)` and `tableName == t1 || …` for the request
// fields that are set (normalizeIdentifier trims and lower-cases the request's
// name; the stored header is compared as it is, so an event without a dbName,
// such as a transaction event, never matches), besides the skip list, and
// answers at most min(maxEvents, hive.metastore.max.event.response) events.
// catName is not sent: the decoder keeps events that carry no catalog, which
// that filter would drop. The header does not always name the
// database an event changes: ALTER_TABLE carries the table's new database (a
// table renamed out of an included database into another one is logged under
// the other one), ALTER_DATABASE the old name (a database renamed into an
// included name is logged under its old one). So the log of a few databases is
// read as the union of several filtered streams: one per database, and one of
// the event types whose header may name another database (ALTER_TABLE,
// ALTER_DATABASE) or the database as the client spelled it (CREATE_DATABASE)
// over every database, every other known type skipped.

// crossDatabaseTypes are the event types whose header may name another
// database than one they change (reference §3 "Header fields"), or name it
// as the client spelled it: CREATE_DATABASE is logged with the client's
// Database object (HMSHandler.create_database_core does not normalize the
// name, ObjectStore lower-cases only what it stores), so `CREATE DATABASE
// Sales` is logged under "Sales", which the dbName filter "sales" misses
// where the metastore's database compares case-sensitively (PostgreSQL,
// Derby, Oracle). The other types name a database read back from the store
// (lower-case) or, for CREATE_TABLE, one Hive 4 normalizes first. The
// transaction events name no database in their header (Hive 3.1 writes the
// string "null"): the table an ALLOC_WRITE_ID_EVENT or COMMIT_COMPACTION_EVENT
// concerns is in its body, and COMMIT_TXN must reach the consumer whichever
// tables its transaction wrote, so they come through this stream too.
var crossDatabaseTypes = []string{message.EventAlterTable, message.EventAlterDatabase, message.EventCreateDatabase,
	message.EventOpenTxn, message.EventAllocWriteID, message.EventCommitTxn, message.EventAbortTxn, message.EventCommitCompaction}

// PushdownDatabase reports whether db can be asked for by name: Hive compares
// the header with the request's name trimmed and lower-cased, so a name that
// is not already in that form would match other headers than the consumer's
// filter does.
func PushdownDatabase(db string) bool {
	return db != "" && db == strings.ToLower(strings.TrimSpace(db))
}

// NextEventsOfDatabases is NextEvents for a consumer that keeps only the
// changes of the databases dbs (each one PushdownDatabase): it reads only the
// events whose header names one of them, plus the types whose header may name
// another database, and returns at most limit events, ascending, without
// duplicates. Events of other databases may still come back (those types; a
// server that ignores the filter): the consumer keeps filtering them.
//
// The batch is complete up to Last: the lowest last id among the streams that
// came back full (limit events, or as many as the server may cap its answers
// at: a short answer no shorter than the largest one seen is checked with a
// one-event read after it), or the current id read before the fetches when
// none did; events above Last are left for the next fetch. Ids the streams
// skip over are normal, so a gap is told by the oldest retained event, as with
// a skip list: beyond after+1, events after the requested id were cleaned.
//
// The calls must all be answered on one connection: a reconnection between
// the current-id read and the last stream is an error (read again), since the
// streams may then have read another log than the one that id belongs to.
//
// A metastore that answers a database stream with events of another database
// does not know the filter (Hive 3): the answer is still complete (a superset),
// and the client reads unfiltered (NextEvents) until its next connection.
func (c *Client) NextEventsOfDatabases(ctx context.Context, after int64, limit int, skipTypes, dbs []string) (Fetch, error) {
	if len(dbs) == 0 || c.filterIgnored.Load() {
		return c.NextEvents(ctx, after, limit, skipTypes)
	}
	cur, err := c.CurrentEventID(ctx)
	if err != nil {
		return Fetch{}, err
	}
	conn := c.connections.Load()
	f := Fetch{Last: after, Current: cur, Databases: len(dbs)}
	switch {
	case cur < after:
		f.Continuity = Reset
		return f, nil
	case cur == after:
		return f, nil
	}
	type stream struct {
		db   string
		skip []string
	}
	streams := make([]stream, 0, len(dbs)+1)
	for _, db := range dbs {
		streams = append(streams, stream{db: db, skip: skipTypes})
	}
	if crossSkip := crossStreamSkip(skipTypes); crossSkip != nil {
		streams = append(streams, stream{skip: crossSkip})
	}
	bound := cur
	var evs []*hmsthrift.NotificationEvent
	// nextInLastAnswer says whether the answer read last held the event
	// after+1: the cleaner deletes the oldest events, so only then was
	// nothing after the cursor cleaned before any of the streams was read.
	// The event after+1 in an earlier stream's answer proves nothing about
	// the streams read after it.
	nextInLastAnswer := false
	holdsNext := func(raw []*hmsthrift.NotificationEvent) bool {
		return slices.ContainsFunc(raw, func(t *hmsthrift.NotificationEvent) bool { return t.EventId == after+1 })
	}
	for _, s := range streams {
		raw, asked, err := c.fetchHalving(ctx, after, limit, s.skip, s.db)
		if err != nil {
			return Fetch{}, err
		}
		nextInLastAnswer = holdsNext(raw)
		switch {
		case limit > 0 && len(raw) >= asked && len(raw) > 0:
			// Full: later events of this stream may lie below the others'
			// last ids; the batch is complete only up to this one's.
			bound = min(bound, raw[asked-1].EventId)
		case len(raw) > 0 && int64(len(raw)) >= c.largestReply.Load():
			// Short, but perhaps only because the server caps its answers
			// below what was asked (Hive's hive.metastore.max.event.response):
			// complete only if nothing of the stream follows up to the bound.
			last := raw[len(raw)-1].EventId
			next, _, err := c.fetchHalving(ctx, last, 1, s.skip, s.db)
			if err != nil {
				return Fetch{}, err
			}
			nextInLastAnswer = false // it reads after last > after
			if len(next) > 0 && next[0].EventId <= bound {
				bound = min(bound, last)
			}
		}
		for _, t := range raw {
			// EqualFold: a metastore database with case-insensitive
			// collation (MySQL's default) matches "Sales" to "sales".
			if s.db != "" && !strings.EqualFold(t.GetDbName(), s.db) && !c.filterIgnored.Swap(true) {
				c.log.Warn("the metastore ignores get_next_notification's dbName filter (older than Hive 4?); reading the whole log until the next connection",
					zap.String("db", s.db), zap.String("event_db", t.GetDbName()), zap.Int64("event_id", t.EventId))
			}
			if s.db == "" && slices.Contains(s.skip, t.EventType) && !slices.Contains(skipTypes, t.EventType) {
				// A server ignoring the skip list (older than Hive 3): the
				// database streams bring this event if it is of theirs.
				continue
			}
			evs = append(evs, t)
		}
	}
	slices.SortStableFunc(evs, func(a, b *hmsthrift.NotificationEvent) int {
		switch {
		case a.EventId < b.EventId:
			return -1
		case a.EventId > b.EventId:
			return 1
		}
		return 0
	})
	f.Events = make([]message.Event, 0, len(evs))
	seen := after
	for _, t := range evs {
		switch {
		case t.EventId <= seen:
			f.Dropped++ // at or below after, or a duplicate
			continue
		case t.EventId > bound:
			continue // read again next time
		}
		if limit > 0 && len(f.Events)+f.Skipped == limit {
			bound = seen // the batch is full: complete up to the last one kept
			break
		}
		seen = t.EventId
		if slices.Contains(skipTypes, t.EventType) {
			f.Skipped++
			continue
		}
		f.Events = append(f.Events, eventFromThrift(t))
	}
	f.Last = max(bound, after)
	if c.filterIgnored.Load() {
		f.Databases = 0 // the streams brought the whole log
	}
	if nextInLastAnswer {
		return f, c.sameConnection(conn, after)
	}
	// The streams skip over the ids of other databases; only cleaned ones make
	// a gap. The oldest retained event is read after every stream, so it
	// also tells of events cleaned between two of them.
	oldest, ok, err := c.OldestEventID(ctx)
	if err != nil {
		return Fetch{}, err
	}
	if err := c.sameConnection(conn, after); err != nil {
		return Fetch{}, err
	}
	if !ok || oldest > after+1 {
		f.Continuity = Gap
	}
	return f, nil
}

// sameConnection returns an error when the client reconnected since the
// connection count was conn: the streams were then not all read from the log
// whose current id bounds the batch (a metastore restarted on a replaced or
// restored database, another metastore behind a load balancer), so the batch
// proves nothing and is read again. With a transient error, the next cycle
// reads the current id afresh and sees a reset as one.
func (c *Client) sameConnection(conn uint64, after int64) error {
	if c.connections.Load() == conn {
		return nil
	}
	return fmt.Errorf("hms get_next_notification of the included databases after %d: the metastore connection was replaced between the current id and the last stream, so the streams may have read another log than the one the current id belongs to; read again", after)
}

// crossStreamSkip is the skip list of the stream of crossDatabaseTypes: every
// other known type (message.EventTypes) and the consumer's skipTypes; nil when
// the consumer skips the crossDatabaseTypes themselves (no such stream). A type
// not known (a newer Hive's) comes back in that stream too, which costs bytes
// but not correctness.
func crossStreamSkip(skipTypes []string) []string {
	var skip []string
	need := false
	for _, t := range crossDatabaseTypes {
		need = need || !slices.Contains(skipTypes, t)
	}
	if !need {
		return nil
	}
	for _, t := range message.EventTypes() {
		if !slices.Contains(crossDatabaseTypes, t) || slices.Contains(skipTypes, t) {
			skip = append(skip, t)
		}
	}
	for _, t := range skipTypes {
		if !slices.Contains(skip, t) {
			skip = append(skip, t)
		}
	}
	return skip
}
