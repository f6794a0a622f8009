package agent

import (
	"github.com/hmssync/hmssync/hms"
)

// dropRepeats keeps, of f's events, those whose id is above after and above
// every id before it, and counts the others in f.Dropped. Several metastore
// instances writing one database can log two events under one id
// (HIVE-16886), so an answer may repeat an id within itself or one a previous
// answer ended with; applied twice, a rename or a drop fails on the FE. The
// first event of each id is the one kept, as hms.Client keeps it (it drops
// repeats itself; this holds for every EventSource). f.Last is the source's,
// so the cursor still moves past the repeats.
func dropRepeats(f *hms.Fetch, after int64) {
	last := after
	kept := f.Events[:0]
	for _, ev := range f.Events {
		if ev.ID <= last {
			f.Dropped++
			continue
		}
		last = ev.ID
		kept = append(kept, ev)
	}
	clear(f.Events[len(kept):]) // the dropped messages are not kept alive
	f.Events = kept
}
