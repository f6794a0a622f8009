package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// seedTestLog is a fake metastore with events 1..n at time base+10·id, except
// the times in odd (id -> time), which are out of order.
func seedTestLog(t *testing.T, n int, base int64, odd map[int64]int64) (*hmstest.Server, *hms.Client) {
	t.Helper()
	srv := hmstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	evs := make([]message.Event, n)
	for i := range evs {
		id := int64(i + 1)
		tm := base + 10*id
		if o, ok := odd[id]; ok {
			tm = o
		}
		evs[i] = message.Event{Time: int32(tm), Type: "ALTER_TABLE", DB: "db", Table: fmt.Sprintf("t%d", id), Message: "{}"}
	}
	srv.Append(evs...)
	cl, err := hms.NewClient(hms.ClientConfig{URIs: []string{srv.URI()}, DialTimeout: 2 * time.Second, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return srv, cl
}

// --from-time finds the first event, in id order, at or after the time,
// also when events near it were written out of time order (scanned within
// the margin); it starts at the log's current id when nothing is that late,
// at the margin's start when the margin holds more than it scans, and refuses
// a time whose events the metastore may have cleaned.
func TestSeedFromTimeBisectsAndScansTheMargin(t *testing.T) {
	ctx := context.Background()
	const base = 10000
	target := time.Unix(base+10*150, 0) // event 150's time
	// 147 was written after the target time, 150 at it: 147 is the first to apply.
	srv, cl := seedTestLog(t, 300, base, map[int64]int64{147: base + 10*150 + 5})

	ch, err := seedFromTime(ctx, cl, target, time.Minute, seedMaxScan)
	if err != nil {
		t.Fatal(err)
	}
	if ch.cursor != 146 || ch.first == nil || ch.first.ID != 147 {
		t.Fatalf("cursor %d, first %+v; want 146, event 147 (the first in id order at or after the time)", ch.cursor, ch.first)
	}
	if !strings.Contains(ch.from, target.UTC().Format(time.RFC3339)) || len(ch.notes) == 0 || !strings.Contains(ch.notes[0], "scanned 4 events") {
		t.Fatalf("from %q, notes %q; want the time and the margin scan (144..147) said", ch.from, ch.notes)
	}

	// More events in the margin than it may scan: it starts at the margin.
	ch, err = seedFromTime(ctx, cl, target, time.Minute, 2)
	if err != nil || ch.cursor != 143 || ch.first == nil || ch.first.ID != 144 {
		t.Fatalf("bounded scan: cursor %d, first %+v, %v; want 143, the margin's first event 144", ch.cursor, ch.first, err)
	}
	// Later than every event: the current id.
	ch, err = seedFromTime(ctx, cl, time.Unix(base+10*1000, 0), time.Minute, seedMaxScan)
	if err != nil || ch.cursor != 300 || ch.first != nil {
		t.Fatalf("late time: cursor %d, first %+v, %v; want 300 and no event yet", ch.cursor, ch.first, err)
	}
	// Earlier than every event of a log that starts at 1: the whole log.
	ch, err = seedFromTime(ctx, cl, time.Unix(base-1000, 0), time.Minute, seedMaxScan)
	if err != nil || ch.cursor != 0 || ch.first == nil || ch.first.ID != 1 {
		t.Fatalf("early time: cursor %d, first %+v, %v; want 0, event 1", ch.cursor, ch.first, err)
	}
	// The events of that time may have been cleaned: refused.
	srv.Clean(100)
	if _, err = seedFromTime(ctx, cl, time.Unix(base+10*50, 0), time.Minute, seedMaxScan); err == nil || !strings.Contains(err.Error(), "cleaned") {
		t.Fatalf("time before the oldest kept event: %v; want a refusal saying events may have been cleaned", err)
	}
	// --from-id: the event is the first applied; a cleaned one is refused.
	if ch, err = seedFromID(ctx, cl, 200); err != nil || ch.cursor != 199 || ch.first == nil || ch.first.ID != 200 {
		t.Fatalf("--from-id 200: cursor %d, first %+v, %v; want 199, event 200", ch.cursor, ch.first, err)
	}
	for _, id := range []int64{50, 302, 0} {
		if _, err := seedFromID(ctx, cl, id); err == nil {
			t.Errorf("--from-id %d accepted (oldest 100, current 300)", id)
		}
	}
	if ch, err = seedCurrent(ctx, cl); err != nil || ch.cursor != 300 {
		t.Fatalf("--current: %d, %v; want 300", ch.cursor, err)
	}
}

// seedConfig writes a sidecar configuration for the metastore uri and the
// etcd at endpoint, cluster "test".
func seedConfig(t *testing.T, uri, endpoint, feURL, dialect string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "sidecar.yaml")
	yaml := fmt.Sprintf(`
cluster: test
member: fe-0
etcd: {endpoints: [%q], lease_ttl: 3s, request_timeout: 900ms}
fe: {url: %q, dialect: %s, health_interval: 100ms}
catalogs:
  - name: hive
    hms_uris: [%q]
    poll_interval: 50ms
`, endpoint, feURL, dialect, uri)
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// `cursor seed` prints what it chose and writes the seed to the etcd of
// --config; a second seed is refused, --force starts a new epoch, --dry-run
// writes nothing, and exactly one of the modes is required.
func TestCursorSeedCommand(t *testing.T) {
	const base = 1_700_000_000
	srv, _ := seedTestLog(t, 40, base, nil)
	etcd := etcdtest.New(t)
	cfg := seedConfig(t, srv.URI(), etcd.Endpoints()[0], "http://127.0.0.1:1", "doris")
	run := func(args ...string) (string, error) {
		app := newApp()
		var out strings.Builder
		app.Writer, app.ErrWriter = &out, &out
		err := app.Run(append([]string{"hmssync", "cursor", "seed", "--config", cfg, "--catalog", "hive"}, args...))
		return out.String(), err
	}
	from := time.Unix(base+10*25, 0).UTC().Format(time.RFC3339)
	out, err := run("--from-time", from, "--dry-run")
	if err != nil || !strings.Contains(out, "cursor 24") || !strings.Contains(out, "id 25 at "+from+", ALTER_TABLE db.t25") || !strings.Contains(out, "not written") {
		t.Fatalf("dry run: %q, %v; want cursor 24, event 25 named with its time, type and table, nothing written", out, err)
	}
	key := "/hmssync/test/catalogs/hive/cursor"
	if resp, err := etcd.Client.Get(context.Background(), key); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the dry run wrote %v (%v)", resp.Kvs, err)
	}
	out, err = run("--from-time", from)
	if err != nil || !strings.Contains(out, "seeded "+key+": unset -> 24 (epoch 0)") {
		t.Fatalf("seed: %q, %v", out, err)
	}
	if resp, _ := etcd.Client.Get(context.Background(), "/hmssync/test/catalogs/hive/metastore"); len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != srv.MetastoreUUID() {
		t.Fatalf("metastore key %v; want the metastore's uuid %s", resp.Kvs, srv.MetastoreUUID())
	}
	if _, err := run("--from-id", "30"); err == nil || !strings.Contains(err.Error(), "already run") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second seed: %v; want it refused with --force named", err)
	}
	if out, err := run("--from-id", "30", "--force"); err != nil || !strings.Contains(out, "24 -> 29 (epoch 1)") {
		t.Fatalf("forced seed: %q, %v; want 24 -> 29 in epoch 1", out, err)
	}
	for _, bad := range [][]string{{}, {"--current", "--from-id", "3"}, {"--from-time", "yesterday"}} {
		if _, err := run(bad...); err == nil {
			t.Errorf("cursor seed %v accepted", bad)
		}
	}
}

// racingSeedLog holds events 1..5 (all before the seed time); its empty fetch
// reports a current id of 7, as a metastore does when events 6 and 7 were
// written between that fetch and its read of the current id. gapFirst makes
// the first fetch report a gap.
type racingSeedLog struct{ gapFirst bool }

func (racingSeedLog) CurrentEventID(context.Context) (int64, error) { return 7, nil }

func (l racingSeedLog) NextEvents(_ context.Context, after int64, max int, _ []string) (hms.Fetch, error) {
	f := hms.Fetch{Last: after}
	if l.gapFirst {
		f.Continuity = hms.Gap
	}
	for id := after + 1; id <= 5 && len(f.Events) < max; id++ {
		f.Events = append(f.Events, message.Event{ID: id, Time: 100, Type: "ALTER_TABLE"})
		f.Last = id
	}
	if len(f.Events) == 0 {
		f.Current = 7
	}
	return f, nil
}

// A scan that finds no event at or after the time starts after the last event
// it read, not at the current id the metastore reported after its empty fetch:
// events written in between are applied. A gap on the scan's first fetch (events
// cleaned since the bisection read its start) is refused.
func TestSeedScanKeepsEventsWrittenDuringItsLastRead(t *testing.T) {
	ctx := context.Background()
	ch, err := scanFromMargin(ctx, racingSeedLog{}, seedChoice{}, 1, 1000, time.Minute, seedMaxScan, 0)
	if err != nil || ch.cursor != 5 || ch.first != nil {
		t.Fatalf("cursor %d, first %+v, %v; want 5 (events 6 and 7, written during the read, applied)", ch.cursor, ch.first, err)
	}
	if _, err := scanFromMargin(ctx, racingSeedLog{gapFirst: true}, seedChoice{}, 1, 1000, time.Minute, seedMaxScan, 0); err == nil || !strings.Contains(err.Error(), "cleaned") {
		t.Fatalf("gap on the first fetch: %v; want a refusal saying events were cleaned", err)
	}
}
