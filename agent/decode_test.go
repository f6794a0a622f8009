package agent

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms/message"
)

// idDecoder turns event n into one descriptor for table "t<n>", fails on the ids
// in bad, and counts its calls.
type idDecoder struct {
	bad   map[int64]bool
	calls atomic.Int64
}

func (d *idDecoder) Decode(e message.Event) ([]change.Descriptor, error) {
	d.calls.Add(1)
	if d.bad[e.ID] {
		return nil, fmt.Errorf("event %d is poison", e.ID)
	}
	return []change.Descriptor{{EventID: e.ID, Op: change.RefreshTable, DB: "db", Table: fmt.Sprintf("t%d", e.ID)}}, nil
}

func events(n int) []message.Event {
	evs := make([]message.Event, n)
	for i := range evs {
		evs[i] = message.Event{ID: int64(i + 1), Type: "ALTER_PARTITION"}
	}
	return evs
}

func TestDecodeAllKeepsTheLogsOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, workers int }{{1000, 4}, {1000, 1}, {10, 8}, {130, 3}} {
		dec := &idDecoder{}
		descs, errs := decodeAll(dec, events(c.n), c.workers)
		bad, err := firstError(errs)
		if err != nil || bad != -1 {
			t.Fatalf("%d events, %d workers: bad %d, err %v", c.n, c.workers, bad, err)
		}
		if len(descs) != c.n || dec.calls.Load() != int64(c.n) {
			t.Fatalf("%d events, %d workers: %d results from %d calls", c.n, c.workers, len(descs), dec.calls.Load())
		}
		for i, ds := range descs {
			if len(ds) != 1 || ds[0].EventID != int64(i+1) || ds[0].Table != fmt.Sprintf("t%d", i+1) {
				t.Fatalf("%d events, %d workers: result %d is %+v, want event %d's", c.n, c.workers, i, ds, i+1)
			}
		}
	}
}

func TestDecodeAllReportsTheFirstPoisonEvent(t *testing.T) {
	t.Parallel()
	// Ids 301 and 701 fail; with four workers of 250 events they are in
	// different runs, decoded concurrently. The first in the log's order is
	// at index 300.
	for _, workers := range []int{1, 4} {
		dec := &idDecoder{bad: map[int64]bool{701: true, 301: true}}
		_, errs := decodeAll(dec, events(1000), workers)
		bad, err := firstError(errs)
		if bad != 300 || err == nil || err.Error() != "event 301 is poison" {
			t.Errorf("%d workers: bad %d, err %v; want index 300 and event 301's error", workers, bad, err)
		}
	}
}

// firstError is the index of the first event in the log's order that failed,
// and its error (-1, nil: none).
func firstError(errs []error) (int, error) {
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return -1, nil
}
