package agent

import "time"

// pollSchedule is how long a master waits between polls of the metastore's
// current event id. Events tend to come in runs (a job writing partitions, a
// burst of DDL): after a poll that found events the next one comes soon
// (busy), so that an event does not wait a whole poll interval before the
// master looks; every poll that finds nothing doubles the wait, up to the poll
// interval. A log that stays idle is therefore polled once per poll interval,
// as with a fixed interval, plus a few polls (log2(interval/busy), six for 25
// ms and 1 s) after each run of events.
//
// A schedule starts idle (at the poll interval): a member that takes the role,
// or starts, on a quiet log costs the metastore nothing extra.
type pollSchedule struct {
	busy, interval time.Duration
	next           time.Duration
}

// defaultBusyPollInterval is the wait after a poll that found events when the
// catalog does not configure one.
const defaultBusyPollInterval = 25 * time.Millisecond

func newPollSchedule(busy, interval time.Duration) pollSchedule {
	if busy <= 0 {
		busy = defaultBusyPollInterval
	}
	busy = min(busy, interval)
	return pollSchedule{busy: busy, interval: interval, next: interval}
}

// after returns the wait before the next poll, given whether the poll that
// just ended found events: busy after one that did; after one that did not,
// twice the previous wait, never above the poll interval.
func (s *pollSchedule) after(found bool) time.Duration {
	if found {
		s.next = s.busy
	} else {
		s.next = min(2*s.next, s.interval)
	}
	return s.next
}
