package hms_test

import (
	"context"
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// What push-down saves, counted by the fake metastore (deterministic: a seeded
// workload): the events and message bytes get_next_notification returned, and
// the calls, for a catalog including one database of ten, read as a backlog
// (batches of 1000) and as a trickle (a read after every 10 events), with and
// without push-down. Run with -v for the numbers.
func TestPushdownSavings(t *testing.T) {
	const events = 5000
	src := hmstest.NewServer()
	defer src.Close()
	if err := (hmstest.Workload{Seed: 1, Databases: 10, Tables: 100, Events: events}).Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	log := src.Events()
	type counts struct{ calls, events, bytes int }
	measure := func(pushdown bool, every int) counts {
		s := hmstest.NewServer()
		defer s.Close()
		s.RecordFetches()
		c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
		ctx := ctxT(t)
		after := int64(0)
		read := func() {
			for {
				var f hms.Fetch
				var err error
				if pushdown {
					f, err = c.NextEventsOfDatabases(ctx, after, 1000, nil, []string{"wl1_db0"})
				} else {
					f, err = c.NextEvents(ctx, after, 1000, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				if f.Continuity != hms.Contiguous {
					t.Fatalf("after %d: %v", after, f.Continuity)
				}
				if f.Last == after {
					return
				}
				after = f.Last
			}
		}
		// The workload's events appear every events at a time, as the
		// master's polls would find them.
		for i := 0; i < len(log); i += every {
			s.Append(log[i:min(i+every, len(log))]...)
			read()
		}
		var n counts
		for _, f := range s.Fetches() {
			n.calls++
			n.events += f.Events
			n.bytes += f.MessageBytes
		}
		n.calls += int(s.Calls("get_current_notificationEventId"))
		return n
	}
	for _, every := range []int{events, 10} {
		full, pushed := measure(false, every), measure(true, every)
		t.Logf("reads every %d events: whole log %d calls, %d events, %d message bytes; push-down (1 database of 10) %d calls, %d events, %d message bytes (%.0f%% of the bytes)",
			every, full.calls, full.events, full.bytes, pushed.calls, pushed.events, pushed.bytes, 100*float64(pushed.bytes)/float64(full.bytes))
		if pushed.bytes >= full.bytes {
			t.Errorf("reads every %d events: push-down fetched %d message bytes, the whole log %d", every, pushed.bytes, full.bytes)
		}
	}
}
