package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/hms/hmstest"
)

// TestBenchTinyRun runs the whole bench at a tiny size, sidecar processes
// included, and checks that its output is complete and consistent. It asserts
// behaviour, not speed.
func TestBenchTinyRun(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	// 300 events in fetches of 50: six fetches, so that a native master's
	// batches of four fetches show (two batches, not one, not six).
	const events, batch = 300, 50
	var out, progress bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &progress
	err := app.Run([]string{"hmssync", "bench", "--events", "300", "--batch-size", "50", "--runs", "1",
		"--duration", "1s", "--rate", "200", "--poll-interval", "100ms", "--fe-latency", "1ms", "--idle", "500ms", "--json"})
	if err != nil {
		t.Fatalf("bench: %v\nprogress:\n%s", err, progress.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	required := []string{"drain_events_per_sec", "follower_drain_events_per_sec", "raw_fetch_events_per_sec",
		"drain_to_raw_ratio", "follower_lag_p50_ms", "follower_lag_p99_ms", "steady_p50_ms", "steady_p99_ms",
		"fe_statements_per_1k_events", "etcd_writes_per_batch", "peak_rss_mib", "cpu_sec_per_100k_events"}
	num := func(m map[string]any, key string) float64 {
		t.Helper()
		v, ok := m[key].(float64)
		if !ok {
			t.Fatalf("key %q missing or not a number in %v", key, m)
		}
		return v
	}
	for _, k := range required {
		num(rep, k)
	}
	dialects, _ := rep["dialects"].(map[string]any)
	for _, d := range []string{"doris", "native"} {
		f, ok := dialects[d].(map[string]any)
		if !ok {
			t.Fatalf("dialect %s missing from %v", d, rep["dialects"])
		}
		for _, k := range required {
			num(f, k)
		}
		for _, k := range []string{"drain_events_per_sec", "follower_drain_events_per_sec", "raw_fetch_events_per_sec", "peak_rss_mib", "steady_events_per_sec", "metastore_calls_per_idle_minute"} {
			if v := num(f, k); v <= 0 {
				t.Errorf("%s: %s = %v, want > 0", d, k, v)
			}
		}
		// Idle, the master polls once per 100 ms poll interval (one more
		// when the 500 ms window catches both ends): 720 a minute at most;
		// polling at the 25 ms busy interval would be 2,400.
		if v := num(f, "metastore_calls_per_idle_minute"); v > 720 {
			t.Errorf("%s: %v metastore calls per idle minute at poll interval 100ms; want at most 720", d, v)
		}
		// The 300 events of the drain are in the log at once: the master
		// reads them in six fetches of 50; a doris master applies and
		// commits them as one batch (it gathers up to 10,000 events), a
		// native one gathers four fetches per batch (agent's
		// localDrainFetches), so two batches. Each member writes
		// its own cursor at least once per batch; a native follower applies
		// at most four fetches per step.
		wantBatches := 1000.0 / events
		if d == "native" {
			const perBatch = 4 * batch
			wantBatches = 1000.0 * float64((events+perBatch-1)/perBatch) / events
		}
		if v := num(f, "batches_per_1k_events"); math.Abs(v-wantBatches) > 1e-9 {
			t.Errorf("%s: %v batches per 1,000 events, want %v", d, v, wantBatches)
		}
		if v := num(f, "etcd_master_cursor_puts_per_batch"); v != 1 {
			t.Errorf("%s: %v master cursor writes per batch, want 1", d, v)
		}
		if v := num(f, "etcd_member_cursor_puts_per_batch"); v < benchSidecars || v > 1+2*events/batch {
			t.Errorf("%s: %v member cursor writes per batch, want %d to %d", d, v, benchSidecars, 1+2*events/batch)
		}
		if w, parts := num(f, "etcd_writes_per_batch"), num(f, "etcd_master_cursor_puts_per_batch")+num(f, "etcd_member_cursor_puts_per_batch"); w < parts {
			t.Errorf("%s: %v etcd writes per batch, fewer than the cursor writes alone (%v)", d, w, parts)
		}
		if r, want := num(f, "drain_to_raw_ratio"), num(f, "drain_events_per_sec")/num(f, "raw_fetch_events_per_sec"); math.Abs(r-want) > 1e-9 {
			t.Errorf("%s: drain/raw %v, want %v", d, r, want)
		}
		if p50, p99 := num(f, "steady_p50_ms"), num(f, "steady_p99_ms"); p50 <= 0 || p99 < p50 {
			t.Errorf("%s: steady p50 %v, p99 %v: want 0 < p50 ≤ p99", d, p50, p99)
		}
		if p50, p99 := num(f, "follower_lag_p50_ms"), num(f, "follower_lag_p99_ms"); p50 < 0 || p99 < p50 {
			t.Errorf("%s: follower lag p50 %v, p99 %v: want 0 ≤ p50 ≤ p99", d, p50, p99)
		}
		// The steady phase's step breakdown comes from the master's own
		// histograms: every applied batch waited for at least one FE answer
		// (--fe-latency 1ms).
		steady, _ := f["master_steady_batch_stage_ms"].(map[string]any)
		for _, k := range []string{"fetch", "decode", "apply", "commit"} {
			if v, _ := steady[k].(float64); v <= 0 {
				t.Errorf("%s: steady-phase %s %v ms per batch, want > 0 (%v)", d, k, v, steady)
			}
		}
		if v, _ := steady["apply"].(float64); v < 1 {
			t.Errorf("%s: steady-phase apply %v ms per batch, below the FE's 1 ms answer", d, v)
		}
		// Every member, and every native FE, ended at the last event.
		last := num(f, "last_event_id")
		if last < events+1 {
			t.Errorf("%s: last event %v, want beyond the %d of the backlog", d, last, events)
		}
		cursors, _ := f["member_cursors"].([]any)
		if len(cursors) != benchSidecars {
			t.Errorf("%s: member cursors %v, want %d", d, f["member_cursors"], benchSidecars)
		}
		for _, c := range cursors {
			if c != last {
				t.Errorf("%s: a member ended at %v, want the last event %v", d, c, last)
			}
		}
		if d == "native" {
			applied, _ := f["fe_applied_event_ids"].([]any)
			if len(applied) != benchSidecars {
				t.Errorf("native: FE applied ids %v, want %d", f["fe_applied_event_ids"], benchSidecars)
			}
			for _, a := range applied {
				if a != last {
					t.Errorf("native: an FE applied up to %v, want the last event %v", a, last)
				}
			}
		}
	}
	// Each doris batch touches tables; the coalesced statements are at most
	// one per touched table.
	doris := dialects["doris"].(map[string]any)
	if v := num(doris, "fe_statements_per_affected_table"); v <= 0 || v > 1 {
		t.Errorf("doris: %v FE statements per touched table, want in (0, 1]", v)
	}
	if v := num(doris, "fe_statements_per_1k_events"); v <= 0 {
		t.Errorf("doris: %v FE statements per 1,000 events, want > 0", v)
	}
	for _, want := range []string{"run 1/1 doris: drained 300 events", "run 1/1 native: drained 300 events", "raw fetch"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
}

// benchSidecars is the number of sidecars of a bench topology: a master and
// two followers.
const benchSidecars = 3

// TestMain lets this test binary be the bench's sidecar processes too: the
// bench starts them from its own executable as `hmssync bench sidecar`, which
// here is this binary, so it runs the command instead of the tests.
func TestMain(m *testing.M) {
	// HMSSYNC_TEST_AS_CLI: a test runs this binary as the hmssync command
	// (completion_test.go's shells).
	if (len(os.Args) > 2 && os.Args[1] == "bench" && os.Args[2] == "sidecar") || os.Getenv("HMSSYNC_TEST_AS_CLI") == "1" {
		if err := newApp().Run(append([]string{"hmssync"}, os.Args[1:]...)); err != nil {
			fmt.Fprintln(os.Stderr, "hmssync:", err)
			if ec, ok := err.(cli.ExitCoder); ok {
				os.Exit(ec.ExitCode())
			}
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchMetastoreWiring runs `bench metastore` over the fake metastore
// without drains (--dialects ""), checking that the flags reach the
// measurement and the JSON comes out; and that a bad --sidecar is refused by
// name. The measurement itself is tested in internal/bench.
func TestBenchMetastoreWiring(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := hmstest.Preload(srv, 300, hmstest.BenchMix); err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &progress
	err := app.Run([]string{"hmssync", "bench", "metastore", "--hms", srv.URI(), "--from", "100", "--to", "300",
		"--batch-size", "50", "--rounds", "2", "--dialects", "", "--json"})
	if err != nil {
		t.Fatalf("bench metastore: %v\nprogress:\n%s", err, progress.String())
	}
	var rep struct {
		From, To, Events int64
		BatchSize        int `json:"batch_size"`
		Rounds           int
		Figures          []struct{ Name string }
		Sidecars         []any
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	if rep.From != 100 || rep.To != 300 || rep.Events != 200 || rep.BatchSize != 50 || rep.Rounds != 2 || len(rep.Figures) != 3 || len(rep.Sidecars) != 0 {
		t.Errorf("report %+v: want (100, 300], 200 events, batch 50, 2 rounds, the three fetch loops and no sidecar", rep)
	}

	app = newApp()
	app.Writer, app.ErrWriter = &out, &progress
	err = app.Run([]string{"hmssync", "bench", "metastore", "--hms", srv.URI(), "--from", "100", "--to", "300", "--sidecar", "/tmp/hmssync"})
	if err == nil || !strings.Contains(err.Error(), "LABEL=PATH") {
		t.Errorf("a --sidecar without a label: %v, want it refused naming LABEL=PATH", err)
	}
}
