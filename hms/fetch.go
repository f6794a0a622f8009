package hms

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/hms/message"
)

// Continuity says how a fetched batch relates to the id it was fetched after.
type Continuity int

const (
	// Contiguous: the events follow the requested id without loss (with a skip
	// list, ids may jump over skipped events).
	Contiguous Continuity = iota
	// Gap: events after the requested id were cleaned from the log; the consumer
	// has missed changes and must full-refresh.
	Gap
	// Reset: the metastore's current id is below the requested id, as when its
	// database was replaced; the consumer must full-refresh.
	Reset
)

func (c Continuity) String() string {
	switch c {
	case Contiguous:
		return "contiguous"
	case Gap:
		return "gap"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("Continuity(%d)", int(c))
}

// Fetch is the result of NextEvents.
type Fetch struct {
	// Events are the events after the requested id, ascending, without
	// duplicates and without the skipped types.
	Events     []message.Event
	Continuity Continuity
	// Dropped counts events the metastore returned that were not after the
	// requested id or repeated an id (duplicates).
	Dropped int
	// Skipped counts events of the skipped types the metastore returned anyway
	// (servers older than Hive 3 ignore the skip list), filtered here.
	Skipped int
	// Last is the highest id the metastore returned after the requested id, kept
	// or skipped; the requested id when none. A consumer that applied Events may
	// move its cursor to Last.
	Last int64
	// Current is the metastore's current event id when the fetch read it (by
	// NextEvents, an empty batch; by NextEventsOfDatabases, always), else 0.
	Current int64
	// Databases is how many databases the metastore filtered this fetch to
	// (NextEventsOfDatabases: push-down); 0 when the whole log was read,
	// including by a metastore found to ignore the filter.
	Databases int
}

// NextEvents reads at most max events after the id after
// (get_next_notification), asking the metastore to skip skipTypes, and
// classifies the batch (SPEC §2 step 5): ids at or below after and repeated ids
// are dropped; a first id beyond after+1 is a Gap (with a skip list, only if the
// oldest retained event is beyond after+1); an empty batch with the current id
// below after is a Reset, and one with the current id above after is a Gap when
// the oldest retained event is beyond after+1 or the log is empty.
//
// A reply larger than the client's byte budget (MaxReplyBytes) is asked for
// again with half as many events, down to one, so that a backlog of large
// events is read in smaller batches rather than refused for ever.
func (c *Client) NextEvents(ctx context.Context, after int64, max int, skipTypes []string) (Fetch, error) {
	raw, max, err := c.fetchHalving(ctx, after, max, skipTypes, "")
	if err != nil {
		return Fetch{}, err
	}
	f := Fetch{Last: after, Events: make([]message.Event, 0, len(raw))}
	first := int64(-1)
	for _, t := range raw {
		if t.EventId <= f.Last {
			f.Dropped++
			continue
		}
		if max > 0 && len(f.Events)+f.Skipped == max {
			break // a server that ignored maxEvents
		}
		if first < 0 {
			first = t.EventId
		}
		f.Last = t.EventId
		if slices.Contains(skipTypes, t.EventType) {
			f.Skipped++
			continue
		}
		f.Events = append(f.Events, eventFromThrift(t))
	}
	switch {
	case first < 0:
		cur, err := c.CurrentEventID(ctx)
		if err != nil {
			return Fetch{}, err
		}
		f.Current = cur
		switch {
		case cur < after:
			f.Continuity = Reset
		case cur > after:
			// Nothing came back although the log moved on: every event after
			// the cursor was cleaned (a listener TTL can empty the whole log),
			// or they were all skipped, or they were written after the fetch.
			// The oldest retained event tells: at or before after+1, nothing
			// was lost.
			oldest, ok, err := c.OldestEventID(ctx)
			if err != nil {
				return Fetch{}, err
			}
			if !ok || oldest > after+1 {
				f.Continuity = Gap
			}
		}
	case first > after+1:
		f.Continuity = Gap
		if len(skipTypes) > 0 {
			// The jump may be skipped events; only cleaned ones make a gap.
			oldest, ok, err := c.OldestEventID(ctx)
			if err != nil {
				return Fetch{}, err
			}
			if ok && oldest <= after+1 {
				f.Continuity = Contiguous
			}
		}
	}
	return f, nil
}

// fetchHalving is nextNotificationOf asking again with half as many events,
// down to one, while the reply is over the client's byte budget
// (MaxReplyBytes), so that a backlog of large events is read in smaller
// batches rather than refused for ever. It returns the max it last asked for.
func (c *Client) fetchHalving(ctx context.Context, after int64, max int, skipTypes []string, db string) ([]*hmsthrift.NotificationEvent, int, error) {
	raw, err := c.nextNotificationOf(ctx, after, max, skipTypes, db)
	for max > 1 && errors.Is(err, ErrReplyTooLarge) && ctx.Err() == nil {
		max /= 2
		c.log.Warn("metastore reply over its byte budget; asking for fewer events",
			zap.Int64("after", after), zap.Int("max_events", max), zap.Int64("max_reply_bytes", c.cfg.MaxReplyBytes), zap.String("db", db))
		raw, err = c.nextNotificationOf(ctx, after, max, skipTypes, db)
	}
	return raw, max, err
}
