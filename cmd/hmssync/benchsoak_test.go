package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestBenchSoakTinyRun runs the soak for 20 s with faults seconds apart (master
// kills at 6 s and 12 s, a metastore restart at 9 s, an etcd restart at 15 s) and checks that the
// report is complete: every slope fitted, every fault done and recovered, the
// killed masters restarted, and the final check passed. It asserts behaviour,
// not the slopes' values, which 20 s cannot measure.
func TestBenchSoakTinyRun(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	var out, progress bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &progress
	err := app.Run([]string{"hmssync", "bench", "soak", "--duration", "20s", "--rate", "200",
		"--failover-every", "6s", "--metastore-restart-every", "12s", "--etcd-restart-every", "30s", "--downtime", "1s", "--quiet", "4s",
		"--sample-interval", "500ms", "--warmup", "4s", "--lease-ttl", "2s", "--poll-interval", "100ms", "--fe-latency", "1ms",
		"--max-slope", "goroutines=1e9", "--json"})
	if err != nil {
		t.Fatalf("bench soak: %v\nprogress:\n%s", err, progress.String())
	}
	var rep struct {
		AppendedEvents int64 `json:"appended_events"`
		Slopes         []struct {
			Name     string
			Samples  int
			Segments int
			StdErr   float64 `json:"stderr_per_hour"`
		}
		Faults []struct {
			Kind     string
			Detail   string
			Recovery float64 `json:"recovery_seconds"`
			Error    string
		}
		Final struct {
			OK                bool
			MetastoreEventID  int64            `json:"metastore_event_id"`
			MasterCursor      int64            `json:"master_cursor"`
			MemberCursors     map[string]int64 `json:"member_cursors"`
			FEAppliedEventIDs []int64          `json:"fe_applied_event_ids"`
			Tables            int
			Problems          []string
		} `json:"final_check"`
		Samples []struct {
			Members []struct {
				Member string
				PID    int
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	want := []string{"rss_mib", "heap_inuse_mib", "goroutines", "open_fds", "etcd_db_mib", "etcd_db_in_use_mib", "lag_events"}
	if len(rep.Slopes) != len(want) {
		t.Fatalf("slopes %+v, want %v", rep.Slopes, want)
	}
	for i, s := range rep.Slopes {
		if s.Name != want[i] || s.Samples < 3 || s.StdErr < 0 {
			t.Errorf("slope %+v: want %s fitted over at least 3 samples", s, want[i])
		}
	}
	kinds := map[string]int{}
	for _, f := range rep.Faults {
		kinds[f.Kind]++
		if f.Error != "" || f.Recovery <= 0 {
			t.Errorf("fault %+v: want it recovered without error", f)
		}
	}
	if kinds["master_kill"] != 2 || kinds["metastore_restart"] != 1 || kinds["etcd_restart"] != 1 {
		t.Errorf("faults %v, want 2 master kills, 1 metastore and 1 etcd restart", kinds)
	}
	// Each master kill shows as a sidecar with a new process id.
	pids := map[string]map[int]bool{}
	for _, s := range rep.Samples {
		for _, m := range s.Members {
			if pids[m.Member] == nil {
				pids[m.Member] = map[int]bool{}
			}
			pids[m.Member][m.PID] = true
		}
	}
	processes := 0
	for _, ps := range pids {
		processes += len(ps)
	}
	if len(pids) != benchSidecars || processes < benchSidecars+2 {
		t.Errorf("sampled processes %v: want %d sidecars, %d processes or more (two restarts)", pids, benchSidecars, benchSidecars+2)
	}
	f := rep.Final
	if !f.OK || len(f.Problems) > 0 {
		t.Fatalf("final check %+v: want passed", f)
	}
	if f.MetastoreEventID < 1000 || f.MetastoreEventID != rep.AppendedEvents || f.MasterCursor != f.MetastoreEventID || f.Tables == 0 {
		t.Errorf("final check %+v after %d events: want the master cursor at the metastore's last event, tables in the metastore", f, rep.AppendedEvents)
	}
	if len(f.MemberCursors) != benchSidecars || len(f.FEAppliedEventIDs) != benchSidecars {
		t.Errorf("final check %+v: want %d member cursors and FEs", f, benchSidecars)
	}
	for m, c := range f.MemberCursors {
		if c != f.MetastoreEventID {
			t.Errorf("%s ended at %d, want %d", m, c, f.MetastoreEventID)
		}
	}
	for i, a := range f.FEAppliedEventIDs {
		if a != f.MetastoreEventID {
			t.Errorf("FE %d applied up to %d, want %d", i+1, a, f.MetastoreEventID)
		}
	}
	if !strings.Contains(progress.String(), "sidecars up") {
		t.Errorf("progress lacks the start:\n%s", progress.String())
	}

	// An unknown slope name is refused before anything runs.
	out.Reset()
	app = newApp()
	app.Writer, app.ErrWriter = &out, &progress
	err = app.Run([]string{"hmssync", "bench", "soak", "--max-slope", "heap=1"})
	if err == nil || !strings.Contains(err.Error(), "--max-slope heap: not a slope") {
		t.Errorf("an unknown --max-slope: %v, want it refused by name", err)
	}
}
