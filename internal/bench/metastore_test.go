package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// TestMain makes this test binary act as `hmssync run --config FILE` when the
// drains start it so (as the sidecar binary under test), so the test needs no
// build of cmd/hmssync; RunSidecar is what `run` runs (sidecar.Run).
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "run" && os.Args[2] == "--config" {
		os.Exit(RunSidecar(os.Args[3], "", "bench-test"))
	}
	os.Exit(m.Run())
}

var metastoreLeakIgnores = []goleak.Option{
	goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
}

// TestRunMetastoreAgainstTheFakeMetastore runs the whole measurement over a
// backlog in the fake metastore: two labelled binaries (both this test binary
// acting as `hmssync run`), both dialects, two rounds. It checks that every
// figure is produced for every round, that the loops counted the events, bytes
// and descriptors of (from, to] as the log holds them, and that every drain
// really reached the end: on the FE (native: its applied event id) and in etcd
// (the committed cursor), without a full refresh. It asserts no speed.
func TestRunMetastoreAgainstTheFakeMetastore(t *testing.T) {
	defer goleak.VerifyNone(t, metastoreLeakIgnores...)
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := hmstest.Preload(srv, 2200, hmstest.BenchMix); err != nil {
		t.Fatal(err)
	}
	const from, to, batch, rounds = 200, 2200, 250, 2

	// What the log holds in (from, to], counted here from the fake's own
	// events.
	var wantEvents, wantBytes, wantDescriptors int64
	for _, ev := range srv.Events() {
		if ev.ID <= from || ev.ID > to {
			continue
		}
		wantEvents++
		wantBytes += int64(len(ev.Message))
		ds, err := hms.Decoder{}.Decode(ev)
		if err != nil {
			t.Fatalf("event %d of the fake's mix does not decode: %v", ev.ID, err)
		}
		wantDescriptors += int64(len(ds))
	}
	if wantEvents != to-from {
		t.Fatalf("the fake log holds %d events in (%d, %d], want %d", wantEvents, from, to, to-from)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := MetastoreOptions{
		HMS: srv.URI(), From: from, To: to, BatchSize: batch, Rounds: rounds,
		Dialects: []string{"doris", "native"},
		Sidecars: []SidecarBinary{{Label: "before", Path: exe}, {Label: "after", Path: exe}},
		Command:  "test",
	}
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := RunMetastore(ctx, o, &progress)
	if err != nil {
		t.Fatalf("RunMetastore: %v\nprogress:\n%s", err, progress.String())
	}

	if rep.Events != wantEvents || rep.MessageBytes != wantBytes || rep.Descriptors != wantDescriptors {
		t.Errorf("counted %d events, %d message bytes, %d descriptors; the log holds %d, %d, %d",
			rep.Events, rep.MessageBytes, rep.Descriptors, wantEvents, wantBytes, wantDescriptors)
	}
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
		for what, sp := range map[string]Spread{"events/s": f.EventsPerSec, "ratio to raw": f.ToRaw} {
			if len(sp.Runs) != rounds {
				t.Errorf("%s %s: %d runs, want %d", f.Name, what, len(sp.Runs), rounds)
			}
			for _, v := range sp.Runs {
				if !(v > 0) {
					t.Errorf("%s %s: run value %v, want > 0", f.Name, what, v)
				}
			}
			if !(sp.Min <= sp.Median && sp.Median <= sp.Max) || sp.Min != slices.Min(sp.Runs) || sp.Max != slices.Max(sp.Runs) {
				t.Errorf("%s %s: min %v, median %v, max %v of %v", f.Name, what, sp.Min, sp.Median, sp.Max, sp.Runs)
			}
		}
	}
	wantNames := []string{"raw fetch", "fetch + decode, sequential", "fetch + decode, next fetch in flight",
		"sidecar drain, before doris", "sidecar drain, before native", "sidecar drain, after doris", "sidecar drain, after native"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("figures %q, want %q", names, wantNames)
	}
	if raw := rep.Figures[0].ToRaw; raw.Min != 1 || raw.Max != 1 {
		t.Errorf("the raw fetch's ratio to itself is %v", raw.Runs)
	}

	if len(rep.Sidecars) != 4 {
		t.Fatalf("%d sidecar entries, want 4 (2 binaries × 2 dialects)", len(rep.Sidecars))
	}
	for _, s := range rep.Sidecars {
		name := s.Label + " " + s.Dialect
		for i, c := range s.MasterCursors {
			if c != to {
				t.Errorf("%s round %d: committed cursor %d at the end, want %d", name, i+1, c, to)
			}
		}
		for i, n := range s.FERequests {
			if n == 0 {
				t.Errorf("%s round %d: the FE got no request", name, i+1)
			}
		}
		switch s.Dialect {
		case "native":
			if !slices.Equal(s.FEApplied, []int64{to, to}) {
				t.Errorf("%s: the FE reports %v applied, want %d in each round", name, s.FEApplied, to)
			}
			// A native master gathers four fetches per batch: the 2,000
			// events in eight fetches of 250 are two commits.
			if s.Commits.Min != 2 || s.Commits.Max != 2 {
				t.Errorf("%s: %v commits, want 2 per round", name, s.Commits.Runs)
			}
		case "doris":
			// A doris master gathers up to 10,000 events into one batch.
			if s.Commits.Max != 1 || s.FirstCommitFallback != rounds {
				t.Errorf("%s: %v commits, %d rounds measured from the election; want one commit each", name, s.Commits.Runs, s.FirstCommitFallback)
			}
		}
		if s.PeakRSSMiB.Min <= 0 || s.CPUSeconds.Min < 0 {
			t.Errorf("%s: peak RSS %v MiB, CPU %v s", name, s.PeakRSSMiB.Runs, s.CPUSeconds.Runs)
		}
		for _, stage := range []string{"fetch", "decode", "apply", "commit"} {
			if sp, ok := s.StageSeconds[stage]; !ok || sp.Min <= 0 {
				t.Errorf("%s: the sidecar's %s time is %v", name, stage, sp.Runs)
			}
		}
	}

	var table bytes.Buffer
	rep.WriteTable(&table)
	for _, want := range []string{"| raw fetch |", "| sidecar drain, after native |", "| before | doris"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back MetastoreReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Events != rep.Events || len(back.Figures) != len(rep.Figures) {
		t.Errorf("the JSON does not read back (%v): %s", err, js.String())
	}
}

// TestMetastoreOptionsCheck names each bad flag.
func TestMetastoreOptionsCheck(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	good := MetastoreOptions{HMS: "thrift://127.0.0.1:9083", From: 10, To: 20, BatchSize: 100, Rounds: 3,
		Dialects: []string{"doris"}, Sidecars: []SidecarBinary{{"this", exe}}}
	if err := good.Check(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for _, c := range []struct {
		change func(*MetastoreOptions)
		want   string
	}{
		{func(o *MetastoreOptions) { o.To = o.From }, "--from 10 --to 10"},
		{func(o *MetastoreOptions) { o.HMS = "http://x" }, "--hms"},
		{func(o *MetastoreOptions) { o.Rounds = 0 }, "--rounds 0"},
		{func(o *MetastoreOptions) { o.Dialects = []string{"log"} }, `"log" is not doris or native`},
		{func(o *MetastoreOptions) { o.Sidecars = append(o.Sidecars, SidecarBinary{"this", exe}) }, `label "this" given twice`},
		{func(o *MetastoreOptions) { o.Sidecars = []SidecarBinary{{"x", "/nonexistent/hmssync"}} }, "not an executable file"},
	} {
		o := good
		o.Sidecars = slices.Clone(good.Sidecars)
		c.change(&o)
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check() = %v, want it to name %q", err, c.want)
		}
	}
	for in, want := range map[string]string{"before=/tmp/a": "before", "x": "LABEL=PATH", "=/tmp/a": "LABEL=PATH", "a b=/tmp/a": "label"} {
		b, err := ParseSidecarBinary(in)
		got := b.Label
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, want) {
			t.Errorf("ParseSidecarBinary(%q) = %q, want %q in it", in, got, want)
		}
	}
}
