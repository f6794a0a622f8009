package sidecar_test

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/internal/config"
)

// The latency sweep measures which etcd round trip the sidecars survive. It is
// a measurement, not part of the default `go test` (a full sweep takes about
// half an hour): it runs only when HMSSYNC_LATENCY_SWEEP names the timing sets
// to measure, e.g.
//
//	HMSSYNC_LATENCY_SWEEP=defaults,minimum nice -n 10 go test ./internal/sidecar/ \
//	    -run TestEtcdLatencySweep -v -timeout 3h
//
// Each point is a fresh rig of TestEtcdLatencyDoesNotFlap's kind (three
// sidecars, a 3-member etcd cluster, 100 events/s), the sidecars in sync, then
// L added to every round trip between each sidecar and each etcd member for
// the window. "Survives" is latencyResult.survives: at most one election in
// the window and the master cursor never still for more than 2 × lease TTL.
// A timing set's sweep stops after two points in a row that do not survive.
//
// More variables:
//
//	HMSSYNC_LATENCY_RTTS     round trips to add, in ms (default 0,100,300,500,750,1000,1500,2000,2500,3000)
//	HMSSYNC_LATENCY_WINDOW   each point's window (default 60s)
//	HMSSYNC_LATENCY_SPIKES   fraction of requests held a further request_timeout,
//	                         so that they take longer than it (default 0)
//	HMSSYNC_LATENCY_REPEAT   runs of each point (default 1)
//	HMSSYNC_LATENCY_OUT      file to append the result rows to (Markdown)
//	HMSSYNC_LATENCY_LOGS     "warn" logs the sidecars' warnings (default: errors only)
func TestEtcdLatencySweep(t *testing.T) {
	sets := os.Getenv("HMSSYNC_LATENCY_SWEEP")
	if sets == "" {
		t.Skip("a measurement: set HMSSYNC_LATENCY_SWEEP=defaults,minimum to run it")
	}
	rtts := envList(t, "HMSSYNC_LATENCY_RTTS", "0,100,300,500,750,1000,1500,2000,2500,3000")
	window := envDuration(t, "HMSSYNC_LATENCY_WINDOW", time.Minute)
	spikes := envFloat(t, "HMSSYNC_LATENCY_SPIKES", 0)
	repeat := int(envFloat(t, "HMSSYNC_LATENCY_REPEAT", 1))
	out := os.Getenv("HMSSYNC_LATENCY_OUT")
	quiet := os.Getenv("HMSSYNC_LATENCY_LOGS") != "warn"

	for _, name := range strings.Split(sets, ",") {
		ts, ok := latencyTimingSets()[name]
		if !ok {
			t.Fatalf("HMSSYNC_LATENCY_SWEEP: unknown timing set %q; want defaults or minimum", name)
		}
		ts.quiet = quiet
		failedInARow := 0
		for _, ms := range rtts {
			if failedInARow >= 2 {
				t.Logf("%s: two latencies in a row not survived; skipping %d ms and above", name, ms)
				break
			}
			rtt := time.Duration(ms) * time.Millisecond
			ld := latencyLoad{rtt: rtt, window: window}
			if spikes > 0 {
				ld.spikeFraction, ld.spikeExtra = spikes, ts.requestTimeout
			}
			survivedAll := true
			for run := range repeat {
				t.Run(fmt.Sprintf("%s/%dms/run%d", name, ms, run+1), func(t *testing.T) {
					r := newNetRigWith(t, 100, ts)
					res := r.runLatency(ld)
					// The sidecars' shutdown is not measured: with seconds
					// of latency it outlasts shutdown_timeout, and sidecar.Run
					// then ends the process.
					r.clearLatency()
					ok := res.survives(ts.leaseTTL)
					survivedAll = survivedAll && ok
					row := latencyRow(name, ts, ld, res, ok)
					t.Log(row)
					if out != "" {
						appendLine(t, out, row)
					}
				})
			}
			if survivedAll {
				failedInARow = 0
			} else {
				failedInARow++
			}
		}
	}
}

// latencyTimingSets are the sidecar timings the sweep knows: the defaults, and
// the shortest lease the configuration accepts (2 s) with the longest request
// timeout allowed with it (below lease_ttl / 3).
func latencyTimingSets() map[string]netOpts {
	def := config.Default().Etcd
	return map[string]netOpts{
		"defaults": {leaseTTL: def.LeaseTTL, requestTimeout: def.RequestTimeout, dialTimeout: def.DialTimeout, delayable: true, productionFE: true},
		"minimum":  {leaseTTL: 2 * time.Second, requestTimeout: 666 * time.Millisecond, dialTimeout: def.DialTimeout, delayable: true, productionFE: true},
	}
}

// latencyRow is one result as a Markdown table row: timing set, lease_ttl,
// request_timeout, added round trip, requests held beyond request_timeout,
// window, elections, elections per minute, time without a master, master
// cursor changes per second, longest time without one, survives, leaders.
func latencyRow(set string, ts netOpts, ld latencyLoad, res latencyResult, ok bool) string {
	spikes := "-"
	if ld.spikeFraction > 0 {
		spikes = fmt.Sprintf("%g%% +%s (%d of %d requests)", 100*ld.spikeFraction, ld.spikeExtra, res.spiked, res.requests)
	}
	verdict := "no"
	if ok {
		verdict = "yes"
	}
	return fmt.Sprintf("| %s | %s | %s | %d ms | %s | %s | %d | %.1f | %.1f s | %.1f | %.1f s | %s | %s |",
		set, ts.leaseTTL, ts.requestTimeout, ld.rtt.Milliseconds(), spikes, res.span.Round(time.Second),
		res.elections, res.electionsPerMinute(), res.leaderless.Seconds(), res.changesPerSecond(), res.gap.Seconds(), verdict,
		strings.Join(res.leaders, " "))
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("HMSSYNC_LATENCY_OUT: %v", err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		t.Fatalf("HMSSYNC_LATENCY_OUT %s: %v", path, err)
	}
}

func envList(t *testing.T, name, def string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Split(cmp.Or(os.Getenv(name), def), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			t.Fatalf("%s: %q is not a number of milliseconds (want e.g. %s)", name, f, def)
		}
		out = append(out, n)
	}
	return out
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s: %q is not a positive duration (want e.g. %s)", name, v, def)
	}
	return d
}

func envFloat(t *testing.T, name string, def float64) float64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		t.Fatalf("%s: %q is not a non-negative number", name, v)
	}
	return f
}
