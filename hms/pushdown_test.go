package hms_test

import (
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// ev is an event of type typ whose header names db (Hive's header rules are
// the caller's: an ALTER_TABLE renaming a table names its new database).
func ev(typ, db string) message.Event {
	return message.Event{Time: 1, Type: typ, DB: db, Message: "{}", Format: message.FormatJSON, Catalog: "hive"}
}

// A log of databases a, b (included) and x, read two events at a time: each
// batch stops where the first full stream stops, so no event below the bound
// is missed; an event in two streams (an ALTER_TABLE of a) comes once; the
// ALTER_TABLE logged under x (a table renamed out of a) comes too.
func TestNextEventsOfDatabasesBoundsAndDuplicates(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	s.Append(
		ev(message.EventCreateTable, "a"), // 1
		ev(message.EventCreateTable, "x"), // 2
		ev(message.EventCreateTable, "b"), // 3
		ev(message.EventAlterTable, "a"),  // 4: in a's stream and in the rename stream
		ev(message.EventInsert, "x"),      // 5
		ev(message.EventInsert, "a"),      // 6
		ev(message.EventAlterTable, "x"),  // 7: a.t renamed to x.t
		ev(message.EventInsert, "b"),      // 8
		ev("OPEN_TXN", ""),                // 9: no database; in the cross-database stream
	)
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	ctx := ctxT(t)
	dbs := []string{"a", "b"}
	steps := []struct {
		after   int64
		want    []int64
		last    int64
		dropped int
	}{
		// a: 1,4 (full: bound 4), b: 3,8 (full), renames: 4,7. Merged 1,3,4,
		// of which two fit: complete up to 3.
		{0, []int64{1, 3}, 3, 0},
		// a: 4,6 (full: bound 6), b: 8, renames: 4,7 (4 twice).
		{3, []int64{4, 6}, 6, 1},
		// a: none, b: 8, cross-database: 7,9 (full). Merged 7,8,9, of
		// which two fit: complete up to 8.
		{6, []int64{7, 8}, 8, 0},
		// All short: up to the current id, 9.
		{8, []int64{9}, 9, 0},
	}
	for _, st := range steps {
		f, err := c.NextEventsOfDatabases(ctx, st.after, 2, nil, dbs)
		if err != nil {
			t.Fatalf("after %d: %v", st.after, err)
		}
		if got := ids(f.Events); !reflect.DeepEqual(got, st.want) || f.Last != st.last || f.Continuity != hms.Contiguous || f.Dropped != st.dropped {
			t.Errorf("after %d: events %v last %d %v dropped %d; want %v last %d contiguous dropped %d",
				st.after, got, f.Last, f.Continuity, f.Dropped, st.want, st.last, st.dropped)
		}
	}
}

// Read to the end in batches of every size, the union of the batches is exactly
// the events of the included databases and the renames, each once, in order,
// and each batch holds at most max events; also from a server that caps its
// answers below what is asked (hive.metastore.max.event.response), whose short
// answers are not all the events there are.
func TestNextEventsOfDatabasesReadsEveryEventOnce(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	dbOf := []string{"a", "x", "y", "b", "x", "x", "a", "y"}
	types := []string{message.EventInsert, message.EventAlterTable, message.EventCreateTable, message.EventAlterDatabase, "OPEN_TXN"}
	var want []int64
	for i := range 200 {
		e := ev(types[i*7%len(types)], dbOf[i*3%len(dbOf)])
		if e.Type == "OPEN_TXN" {
			e.DB = ""
		}
		first, _ := s.Append(e)
		// Transaction events come whatever their header says (none).
		if e.DB == "a" || e.DB == "b" || e.Type == message.EventAlterTable || e.Type == message.EventAlterDatabase || e.Type == "OPEN_TXN" {
			want = append(want, first)
		}
	}
	for _, cap := range []int{0, 2, 5} {
		s.SetMaxEventResponse(cap)
		c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}}) // learns the cap afresh
		readAll(t, c, cap, want)
	}
}

func readAll(t *testing.T, c *hms.Client, cap int, want []int64) {
	t.Helper()
	ctx := ctxT(t)
	for _, max := range []int{1, 2, 3, 7, 50, 1000} {
		var got []int64
		after := int64(0)
		for calls := 0; after < 200; calls++ {
			if calls > 400 {
				t.Fatalf("cap %d max %d: no progress after %d calls, at %d", cap, max, calls, after)
			}
			f, err := c.NextEventsOfDatabases(ctx, after, max, nil, []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Events) > max || f.Continuity != hms.Contiguous || f.Last < after {
				t.Fatalf("cap %d max %d after %d: %d events, %v, last %d", cap, max, after, len(f.Events), f.Continuity, f.Last)
			}
			got = append(got, ids(f.Events)...)
			after = f.Last
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("cap %d max %d: read %v\nwant %v", cap, max, got, want)
		}
	}
}

// Filtered jumps are not gaps; cleaned events are.
func TestNextEventsOfDatabasesGapVersusFilteredJump(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	for range 8 {
		s.Append(ev(message.EventInsert, "x"))
	}
	s.Append(ev(message.EventInsert, "a")) // 9
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	ctx := ctxT(t)
	f, err := c.NextEventsOfDatabases(ctx, 0, 10, nil, []string{"a"})
	if err != nil || f.Continuity != hms.Contiguous || !reflect.DeepEqual(ids(f.Events), []int64{9}) || f.Last != 9 {
		t.Fatalf("jump over x's events: %v %v last %d, %v; want [9] contiguous last 9", ids(f.Events), f.Continuity, f.Last, err)
	}
	s.Append(ev(message.EventInsert, "x"), ev(message.EventInsert, "x")) // 10, 11: nothing of a
	if f, err = c.NextEventsOfDatabases(ctx, 9, 10, nil, []string{"a"}); err != nil || f.Continuity != hms.Contiguous || len(f.Events) != 0 || f.Last != 11 {
		t.Fatalf("nothing of a after 9: %v %v last %d, %v; want none, contiguous, last 11", ids(f.Events), f.Continuity, f.Last, err)
	}
	s.Clean(6) // 1..5 gone: reading after 2 misses 3..5
	if f, err = c.NextEventsOfDatabases(ctx, 2, 10, nil, []string{"a"}); err != nil || f.Continuity != hms.Gap {
		t.Fatalf("after 2 with 1..5 cleaned: %v %v, %v; want a gap", ids(f.Events), f.Continuity, err)
	}
	if f, err = c.NextEventsOfDatabases(ctx, 5, 10, nil, []string{"a"}); err != nil || f.Continuity != hms.Contiguous {
		t.Fatalf("after 5 with 1..5 cleaned: %v %v, %v; want contiguous", ids(f.Events), f.Continuity, err)
	}
	if f, err = c.NextEventsOfDatabases(ctx, 20, 10, nil, []string{"a"}); err != nil || f.Continuity != hms.Reset || f.Current != 11 {
		t.Fatalf("after 20 with the log at 11: %v current %d, %v; want a reset", f.Continuity, f.Current, err)
	}
}

// A server that does not know the database filter (older than Hive 4) answers
// every stream with the whole log: the batch is still right (a superset of
// the included databases' events), and the client then reads unfiltered, one
// request per fetch.
func TestNextEventsOfDatabasesServerIgnoringTheFilter(t *testing.T) {
	for _, ignoreSkip := range []bool{false, true} {
		s := hmstest.NewServer()
		s.IgnoreRequestFilters(true)
		s.IgnoreSkipList(ignoreSkip)
		s.Append(ev(message.EventInsert, "x"), ev(message.EventInsert, "a"), ev("OPEN_TXN", ""), ev(message.EventInsert, "a"), ev(message.EventInsert, "x"))
		c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
		ctx := ctxT(t)
		s.RecordFetches()
		var got []int64
		after := int64(0)
		for calls := 0; after < 5; calls++ {
			if calls > 5 {
				t.Fatalf("ignoreSkip %v: stuck at %d", ignoreSkip, after)
			}
			f, err := c.NextEventsOfDatabases(ctx, after, 3, []string{"OPEN_TXN"}, []string{"a"})
			if err != nil {
				t.Fatal(err)
			}
			if f.Continuity != hms.Contiguous || len(f.Events) > 3 {
				t.Fatalf("ignoreSkip %v: after %d: %v %v", ignoreSkip, after, ids(f.Events), f.Continuity)
			}
			got = append(got, ids(f.Events)...)
			after = f.Last
		}
		if !slices.Contains(got, 2) || !slices.Contains(got, 4) || slices.Contains(got, 3) || !slices.IsSorted(got) {
			t.Errorf("ignoreSkip %v: read %v; want 2 and 4 (a's), not 3 (skipped), ascending", ignoreSkip, got)
		}
		fetches := s.Fetches()
		if len(fetches) < 3 {
			t.Fatalf("ignoreSkip %v: fetch log %+v; want the first call's streams and the later calls", ignoreSkip, fetches)
		}
		for _, sf := range fetches[2:] { // the first call: a's stream and the renames'
			if sf.DB != "" {
				t.Errorf("ignoreSkip %v: fetch %+v still filtered after the server showed it ignores the filter", ignoreSkip, sf)
			}
		}
		s.Close()
	}
}

// The fake metastore filters as Hive 4.0.1's ObjectStore does: the request's
// names are trimmed and lower-cased, headers compared as stored, and an event
// without a dbName or catName never matches a filter on it.
func TestFakeFiltersAsHive4(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	s.Append(ev(message.EventInsert, "a"), ev("OPEN_TXN", ""), message.Event{Type: message.EventInsert, DB: "a", Message: "{}"}, ev(message.EventInsert, "A"))
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	// Every type of the cross-database stream skipped: only the database
	// stream is read.
	f, err := c.NextEventsOfDatabases(ctxT(t), 0, 10, []string{message.EventAlterTable, message.EventAlterDatabase, message.EventCreateDatabase,
		message.EventOpenTxn, message.EventAllocWriteID, message.EventCommitTxn, message.EventAbortTxn, message.EventCommitCompaction}, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	// Event 4's header "A" is not "a"; event 2 has no database.
	if got := ids(f.Events); !reflect.DeepEqual(got, []int64{1, 3}) {
		t.Errorf("events of a: %v; want [1 3]", got)
	}
}

// The streams are read one after another, and the metastore's cleaner may
// run in between: events of a stream read after the cleaning are gone from
// it although an earlier stream still returned the event after the cursor.
// That is a gap (as one unfiltered read would have shown: its first event
// beyond after+1), not a contiguous batch without the cleaned events.
func TestNextEventsOfDatabasesCleanedBetweenStreams(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	s.Append(
		ev(message.EventInsert, "a"), // 1
		ev(message.EventInsert, "b"), // 2: cleaned before b's stream is read
		ev(message.EventInsert, "b"), // 3
	)
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	var cleaned atomic.Bool
	s.AfterFetch(func(f hmstest.ServedFetch) {
		if f.DB == "a" && cleaned.CompareAndSwap(false, true) {
			s.Clean(3)
		}
	})
	f, err := c.NextEventsOfDatabases(ctxT(t), 0, 10, nil, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if !cleaned.Load() {
		t.Fatal("the cleaner never ran: a's stream was not read")
	}
	if f.Continuity != hms.Gap {
		t.Errorf("event 2 cleaned between the streams: events %v, %v, last %d; want a gap", ids(f.Events), f.Continuity, f.Last)
	}
}

// Fetch.Databases says how many databases the metastore filtered the fetch
// to: the included ones, and none once it showed it ignores the filter.
func TestNextEventsOfDatabasesCountsTheFilteredDatabases(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		s := hmstest.NewServer()
		s.IgnoreRequestFilters(ignore)
		s.Append(ev(message.EventInsert, "a"), ev(message.EventInsert, "x"), ev(message.EventInsert, "b"))
		c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
		want := 2
		if ignore {
			want = 0
		}
		for _, after := range []int64{0, 1} { // the first fetch finds out, the second reads the whole log
			f, err := c.NextEventsOfDatabases(ctxT(t), after, 10, nil, []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			if f.Databases != want {
				t.Errorf("server ignoring the filter %v, after %d: Databases %d, want %d", ignore, after, f.Databases, want)
			}
		}
		if f, err := c.NextEvents(ctxT(t), 0, 10, nil); err != nil || f.Databases != 0 {
			t.Errorf("NextEvents: Databases %d, %v; want 0", f.Databases, err)
		}
		s.Close()
	}
}

// Hive logs CREATE_DATABASE with the client's Database object
// (HMSHandler.create_database_core does not normalize its name; ObjectStore
// lower-cases only what it stores), so `CREATE DATABASE Sales` is logged
// under "Sales", which a dbName filter of "sales" does not match on a
// metastore database that compares case-sensitively (PostgreSQL, Derby,
// Oracle; the fake does too). The consumer lower-cases names and keeps the
// event, so push-down must read it too.
func TestNextEventsOfDatabasesCreateDatabaseSpelledInUpperCase(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	s.Append(ev(message.EventCreateDatabase, "Sales"), ev(message.EventCreateDatabase, "HR"))
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	f, err := c.NextEventsOfDatabases(ctxT(t), 0, 10, nil, []string{"sales"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(f.Events); !slices.Contains(got, 1) {
		t.Errorf("events %v, last %d; want CREATE_DATABASE Sales (1) among them", got, f.Last)
	}
}

// Transaction events name no database in their header (Hive 3.1: "null" and
// " "; Hive 4: none): the filtered read must still return them, since the
// table a COMMIT_TXN makes visible is known only from its allocations.
func TestNextEventsOfDatabasesKeepsTransactionEvents(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	s.Append(ev(message.EventCreateTable, "x"), ev(message.EventOpenTxn, "null"), ev(message.EventAllocWriteID, "null"),
		ev(message.EventCommitTxn, ""), ev(message.EventAbortTxn, "null"), ev(message.EventCommitCompaction, ""), ev(message.EventInsert, "x"))
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	f, err := c.NextEventsOfDatabases(ctxT(t), 0, 10, nil, []string{"sales"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(f.Events), []int64{2, 3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("events %v, last %d; want the transaction events %v (and not x's)", got, f.Last, want)
	}
}

// The metastore's log is replaced between the current-id read and the streams
// (a restored or new metastore database: the server restarts, the client
// reconnects). The streams then read another log than the one whose current
// id bounds the batch: reading the whole log, the empty answer makes the
// client read the current id afresh and see the reset; the filtered read
// must not instead call the batch complete up to the old log's id.
func TestNextEventsOfDatabasesLogReplacedBetweenCurrentIDAndStreams(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	s.SetMetastoreUUID("") // a restored copy would not tell by its uuid either
	for range 5 {
		s.Append(ev(message.EventInsert, "a")) // 1..5
	}
	for range 5 {
		s.Append(ev(message.EventInsert, "x")) // 6..10
	}
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	var replaced atomic.Bool
	newLog := make(chan struct{}) // closed once the new log is written
	s.AfterFetch(func(f hmstest.ServedFetch) {
		if f.DB == "a" && replaced.CompareAndSwap(false, true) {
			s.Reset(1)
			s.Append(ev(message.EventInsert, "x"), ev(message.EventInsert, "x"), ev(message.EventInsert, "x")) // 1..3
			close(newLog)
		}
	})
	f, err := c.NextEventsOfDatabases(ctxT(t), 5, 10, nil, []string{"a"})
	if !replaced.Load() {
		t.Fatal("the log was never replaced: a's stream was not read")
	}
	if err == nil && f.Continuity != hms.Reset {
		t.Errorf("log replaced (now at 3) after the current id 10 was read: %v, last %d, events %v; want a reset or an error", f.Continuity, f.Last, ids(f.Events))
	}
	// Read again, the reset shows. Reset drops the server's connections, as a
	// restart does, so the first read may have returned (with its "connection
	// replaced" error) before the hook wrote the new log: wait until it has.
	<-newLog
	if f, err = c.NextEventsOfDatabases(ctxT(t), 5, 10, nil, []string{"a"}); err != nil || f.Continuity != hms.Reset || f.Current != 3 {
		t.Errorf("read again: %v current %d, %v; want a reset, current 3", f.Continuity, f.Current, err)
	}
}
