package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// A sidecar restarted mid-run starts from a lower RSS: fitted with one
// intercept per process, two processes that each grow 2 MiB an hour give
// 2 MiB an hour, not the negative slope a single line through the drop would.
func TestSoakSlopeHasOneInterceptPerProcess(t *testing.T) {
	var samples []SoakSample
	for i := range 40 {
		at := float64(i) * 90 // seconds; one hour in all
		pid, up, base := 100, at, 60.0
		if at >= 1800 {
			pid, up, base = 200, at-1800, 20.0 // restarted at 30 min
		}
		rss := base + 2*at/3600
		samples = append(samples, SoakSample{AtSeconds: at, LagEvents: 10, EtcdDBBytes: 1 << 20, EtcdDBInUseBytes: 1 << 20, Members: []SoakMemberSample{
			{Member: "sidecar-1", PID: pid, UpSeconds: up, RSSBytes: int64(rss * (1 << 20)), HeapInuseBytes: 12 << 20, Goroutines: 50, OpenFDs: 20},
		}})
	}
	slopes := soakSlopes(samples, 0)
	if len(slopes) != len(soakSlopeNames) {
		t.Fatalf("%d slopes, want %d (%v)", len(slopes), len(soakSlopeNames), soakSlopeNames)
	}
	for i, s := range slopes {
		if s.Name != soakSlopeNames[i] {
			t.Errorf("slope %d is %q, want %q", i, s.Name, soakSlopeNames[i])
		}
	}
	rss := slopes[0]
	if math.Abs(rss.PerHour-2) > 1e-6 || rss.Segments != 2 || rss.Samples != 40 {
		t.Errorf("rss slope %+v: want 2 MiB/h over 40 samples in 2 segments", rss)
	}
	if rss.StdErrPerHour < 0 || rss.StdErrPerHour > 1e-6 {
		t.Errorf("rss standard error %v on exact data, want about 0", rss.StdErrPerHour)
	}
	for _, s := range slopes[1:] {
		if s.PerHour != 0 || s.Samples == 0 {
			t.Errorf("%s: %+v, want a flat slope over the samples", s.Name, s)
		}
	}

	// The warm-up counts from each process's start too: with 20 min, the
	// second process's first 20 minutes are left out.
	warm := soakSlopes(samples, 1200)[0]
	if warm.Samples != 40-14-14 || warm.Segments != 2 {
		t.Errorf("after a 20 min warm-up: %d samples in %d segments, want 12 in 2", warm.Samples, warm.Segments)
	}
}

func TestSoakVerdict(t *testing.T) {
	r := &SoakReport{Final: SoakFinal{OK: true}, Slopes: []SoakSlope{
		{Name: "rss_mib", Unit: "MiB", PerHour: 3, StdErrPerHour: 1},
		{Name: "goroutines", Unit: "goroutines", PerHour: -50, StdErrPerHour: 10},
		{Name: "open_fds", Unit: "file descriptors", StdErrPerHour: -1},
	}}
	if err := r.Verdict(map[string]float64{"rss_mib": 64, "goroutines": 0}); err != nil {
		t.Errorf("slopes within their bounds (a falling one included): %v", err)
	}
	err := r.Verdict(map[string]float64{"rss_mib": 1, "open_fds": 100})
	if err == nil || !strings.Contains(err.Error(), "slope rss_mib: +3 MiB/h, above the bound of 1") || !strings.Contains(err.Error(), "open_fds: too few samples") {
		t.Errorf("verdict %v: want rss_mib over its bound and open_fds unmeasured", err)
	}
	r.Final = SoakFinal{Problems: []string{"FE 2 applied up to 7, metastore at 9"}}
	if err := r.Verdict(nil); err == nil || !strings.Contains(err.Error(), "FE 2 applied up to 7") {
		t.Errorf("verdict of a failed final check: %v", err)
	}
	var b bytes.Buffer
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "| rss_mib (MiB) | 0 | +3 | 1 |") || !strings.Contains(b.String(), "Final check: FAILED") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestSoakFaultScheduleStaysOutOfTheQuietEnd(t *testing.T) {
	o := SoakOptions{Duration: time.Hour, Quiet: time.Minute, FailoverEvery: 4 * time.Minute, EtcdRestartEvery: 20 * time.Minute, MetastoreRestartEvery: 20 * time.Minute}
	kinds := map[string]int{}
	var last time.Duration
	for _, f := range o.faultSchedule() {
		if f.at < last {
			t.Errorf("fault at %s after one at %s: want them in order", f.at, last)
		}
		if f.at >= o.Duration-o.Quiet {
			t.Errorf("%s at %s: within the quiet last minute", f.kind, f.at)
		}
		last = f.at
		kinds[f.kind]++
	}
	if kinds[faultMasterKill] != 14 || kinds[faultEtcdRestart] != 3 || kinds[faultMetastoreRestart] != 3 {
		t.Errorf("faults %v: want 14 master kills (every 4 min), 3 etcd and 3 metastore restarts", kinds)
	}
}
