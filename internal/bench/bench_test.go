package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestBenchTableNamesEveryFigure(t *testing.T) {
	f := &Figures{DrainEPS: 25000, RawFetchEPS: 40000, DrainToRaw: 0.625, LagP99: 150, SteadyP99: 900, StatementsPerTable: 1, PeakRSSMiB: 30,
		MasterStageMS: map[string]float64{}}
	f.IdleCallsPerMin = 60
	r := &Report{Command: "hmssync bench", PollIntervalMS: 1000, IdleSeconds: 10, SteadyRate: 500, Runs: 3, Dialects: map[string]*Figures{"doris": f}, InFE: inFECeiling()}
	var b bytes.Buffer
	r.WriteTable(&b)
	for _, want := range []string{
		"| 1. backlog drain, master (events/s) | 25,000 ✓ |",
		"| 2. drain / raw | 0.62 ✓ |",
		"follower lag after a master commit, p50 / p99 (ms) | 0.0 / 150.0 ✗ |",
		"0 / 900 ✗ | p99 ≤ 300 ms |",
		"| 4. metastore calls per idle minute (polls and fetches) | 60.0 ✓ | ≤ 60 (one per poll interval) |",
		"50 events/s; follower wake-up ≤ 10000 ms",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestMedianAndPercentile(t *testing.T) {
	if m := median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median(5,1,3) = %v, want 3", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median(4,1,3,2) = %v, want 2.5", m)
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing should be NaN")
	}
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100 … 1
	}
	// Nearest rank: p50 of 1…100 is the 50th value, p99 the 99th.
	if p := percentile(xs, 0.5); p != 50 {
		t.Errorf("p50 of 1…100 = %v, want 50", p)
	}
	if p := percentile(xs, 0.99); p != 99 {
		t.Errorf("p99 of 1…100 = %v, want 99", p)
	}
	if p := percentile([]float64{7}, 0.99); p != 7 {
		t.Errorf("p99 of one value = %v, want it", p)
	}
}

func TestCursorTrackReached(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tr := cursorTrack{{t0, 0}, {t0.Add(time.Second), 100}, {t0.Add(2 * time.Second), 250}}
	for _, c := range []struct {
		v    int64
		at   time.Time
		ok   bool
		name string
	}{
		{0, t0, true, "exactly the first"},
		{50, t0.Add(time.Second), true, "between two moves: the later"},
		{250, t0.Add(2 * time.Second), true, "the last"},
		{251, time.Time{}, false, "never reached"},
	} {
		at, ok := tr.reached(c.v)
		if ok != c.ok || !at.Equal(c.at) {
			t.Errorf("%s: reached(%d) = %v, %v; want %v, %v", c.name, c.v, at, ok, c.at, c.ok)
		}
	}
}
