package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// SoakReport is `hmssync bench soak`'s output.
type SoakReport struct {
	Command         string  `json:"command"`
	Machine         string  `json:"machine"`
	GoVersion       string  `json:"go_version"`
	LoadBefore      string  `json:"load_average_before"`
	LoadAfter       string  `json:"load_average_after"`
	Dialect         string  `json:"dialect"`
	Sidecars        int     `json:"sidecars"`
	Etcd            string  `json:"etcd"`
	DurationSeconds float64 `json:"duration_seconds"`
	Rate            float64 `json:"rate_events_per_sec"`
	AppendedEvents  int64   `json:"appended_events"`
	AppendRate      float64 `json:"append_rate_events_per_sec"`
	WarmupSeconds   float64 `json:"warmup_seconds"`
	SampleSeconds   float64 `json:"sample_interval_seconds"`
	LeaseTTLSeconds float64 `json:"lease_ttl_seconds"`
	BatchSize       int     `json:"batch_size"`
	PollIntervalMS  float64 `json:"poll_interval_ms"`
	FELatencyMS     float64 `json:"fe_latency_ms"`
	// Slopes are the figures' least-squares slopes per hour (soakSlopes).
	Slopes  []SoakSlope  `json:"slopes"`
	Faults  []SoakFault  `json:"faults"`
	Final   SoakFinal    `json:"final_check"`
	Seconds float64      `json:"seconds"`
	Samples []SoakSample `json:"samples"`
}

// SoakSlope is one figure's trend over the samples after the warm-up: the
// least-squares slope with one intercept per segment (per sidecar process for
// the sidecars' figures, since a restarted process starts afresh; one segment
// for etcd's and the cluster's), and its standard error, both per hour. A
// slope within about two standard errors of 0 is not distinguishable from
// noise.
type SoakSlope struct {
	Name          string  `json:"name"`
	Unit          string  `json:"unit"`
	PerHour       float64 `json:"per_hour"`
	StdErrPerHour float64 `json:"stderr_per_hour"` // -1: too few samples
	// Mean is the figure's mean over the samples used (its level).
	Mean     float64 `json:"mean"`
	Samples  int     `json:"samples"`
	Segments int     `json:"segments"`
	// PerMember is each sidecar's own slope per hour (sidecar figures only).
	PerMember map[string]float64 `json:"per_member,omitempty"`
}

// soakSlopeNames are the slopes a report has, in its order.
var soakSlopeNames = []string{"rss_mib", "heap_inuse_mib", "goroutines", "open_fds", "etcd_db_mib", "etcd_db_in_use_mib", "lag_events"}

// soakPoint is one sample of one figure in one segment.
type soakPoint struct {
	segment string
	hours   float64
	value   float64
}

// soakSlopes fits every figure's slope over the samples taken at least warmup
// into the run and, for a sidecar's figures, at least warmup into the life of
// the process.
func soakSlopes(samples []SoakSample, warmup float64) []SoakSlope {
	type member struct {
		name, unit string
		get        func(m SoakMemberSample) float64
	}
	var out []SoakSlope
	for _, f := range []member{
		{"rss_mib", "MiB", func(m SoakMemberSample) float64 { return mibOrMissing(m.RSSBytes) }},
		{"heap_inuse_mib", "MiB", func(m SoakMemberSample) float64 { return mibOrMissing(m.HeapInuseBytes) }},
		{"goroutines", "goroutines", func(m SoakMemberSample) float64 { return float64(m.Goroutines) }},
		{"open_fds", "file descriptors", func(m SoakMemberSample) float64 { return float64(m.OpenFDs) }},
	} {
		var all []soakPoint
		byMember := map[string][]soakPoint{}
		for _, s := range samples {
			if s.AtSeconds < warmup {
				continue
			}
			for _, m := range s.Members {
				v := f.get(m)
				if m.UpSeconds < warmup || v < 0 {
					continue
				}
				p := soakPoint{fmt.Sprintf("%s/%d", m.Member, m.PID), s.AtSeconds / 3600, v}
				all = append(all, p)
				byMember[m.Member] = append(byMember[m.Member], p)
			}
		}
		sl := fitSlope(f.name, f.unit, all)
		sl.PerMember = map[string]float64{}
		for m, ps := range byMember {
			sl.PerMember[m] = fitSlope("", "", ps).PerHour
		}
		out = append(out, sl)
	}
	for _, f := range []struct {
		name, unit string
		get        func(s SoakSample) float64
	}{
		{"etcd_db_mib", "MiB", func(s SoakSample) float64 { return mibOrMissing(s.EtcdDBBytes) }},
		{"etcd_db_in_use_mib", "MiB", func(s SoakSample) float64 { return mibOrMissing(s.EtcdDBInUseBytes) }},
		{"lag_events", "events", func(s SoakSample) float64 { return float64(s.LagEvents) }},
	} {
		var ps []soakPoint
		for _, s := range samples {
			if v := f.get(s); s.AtSeconds >= warmup && v >= 0 {
				ps = append(ps, soakPoint{"", s.AtSeconds / 3600, v})
			}
		}
		out = append(out, fitSlope(f.name, f.unit, ps))
	}
	return out
}

func mibOrMissing(b int64) float64 {
	if b < 0 {
		return -1
	}
	return float64(b) / (1 << 20)
}

// fitSlope is the least-squares slope common to all segments, each with its
// own intercept (x: hours): Σ (x-x̄ₛ)(y-ȳₛ) / Σ (x-x̄ₛ)², with its standard
// error from the residuals. Segments of one point carry no slope and are left
// out.
func fitSlope(name, unit string, ps []soakPoint) SoakSlope {
	sl := SoakSlope{Name: name, Unit: unit, StdErrPerHour: -1}
	seg := map[string][]soakPoint{}
	for _, p := range ps {
		seg[p.segment] = append(seg[p.segment], p)
	}
	var sxx, sxy, sum float64
	n := 0
	type mean struct{ x, y float64 }
	means := map[string]mean{}
	for k, s := range seg {
		if len(s) < 2 {
			continue
		}
		var mx, my float64
		for _, p := range s {
			mx += p.hours
			my += p.value
		}
		mx /= float64(len(s))
		my /= float64(len(s))
		means[k] = mean{mx, my}
		for _, p := range s {
			sxx += (p.hours - mx) * (p.hours - mx)
			sxy += (p.hours - mx) * (p.value - my)
			sum += p.value
		}
		n += len(s)
	}
	sl.Samples, sl.Segments = n, len(means)
	if n > 0 {
		sl.Mean = sum / float64(n)
	}
	if sxx == 0 {
		return sl
	}
	sl.PerHour = sxy / sxx
	if dof := n - len(means) - 1; dof > 0 {
		var ssr float64
		for k, s := range seg {
			m, ok := means[k]
			if !ok {
				continue
			}
			for _, p := range s {
				r := p.value - m.y - sl.PerHour*(p.hours-m.x)
				ssr += r * r
			}
		}
		sl.StdErrPerHour = math.Sqrt(ssr / float64(dof) / sxx)
	}
	return sl
}

// Slope returns the slope named name (SoakSlope.Name).
func (r *SoakReport) Slope(name string) (SoakSlope, bool) {
	for _, s := range r.Slopes {
		if s.Name == name {
			return s, true
		}
	}
	return SoakSlope{}, false
}

// Verdict is nil when the final check passed and no slope bounded in
// maxSlopes grows faster than its bound; otherwise it says what failed. A
// bounded slope without enough samples to fit fails too: it says nothing.
func (r *SoakReport) Verdict(maxSlopes map[string]float64) error {
	var bad []string
	if !r.Final.OK {
		bad = append(bad, "final check failed: "+strings.Join(r.Final.Problems, "; "))
	}
	names := make([]string, 0, len(maxSlopes))
	for n := range maxSlopes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, ok := r.Slope(n)
		switch {
		case !ok || s.StdErrPerHour < 0:
			bad = append(bad, fmt.Sprintf("slope %s: too few samples after the warm-up to fit one", n))
		case s.PerHour > maxSlopes[n]:
			bad = append(bad, fmt.Sprintf("slope %s: %+.3g %s/h, above the bound of %g", n, s.PerHour, s.Unit, maxSlopes[n]))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench soak: %s", strings.Join(bad, "; "))
	}
	return nil
}

// WriteTable prints the report as Markdown, ready for BENCHMARKS.md.
func (r *SoakReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "- Command: `%s`\n", r.Command)
	fmt.Fprintf(w, "- Machine: %s; %s; load average %s before, %s after (1, 5, 15 min)\n", r.Machine, r.GoVersion, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "- Setup: %d %s sidecars, etcd: %s; %.0f s at %.0f events/s (%d events, %.0f/s reached); lease TTL %.0f s, batch size %d, poll interval %s, FE %s per batch; a sample every %.0f s, slopes after a %.0f s warm-up (%.0f s in all)\n",
		r.Sidecars, r.Dialect, r.Etcd, r.DurationSeconds, r.Rate, r.AppendedEvents, r.AppendRate, r.LeaseTTLSeconds, r.BatchSize, fmtMS(r.PollIntervalMS), fmtMS(r.FELatencyMS), r.SampleSeconds, r.WarmupSeconds, r.Seconds)
	kinds := map[string]int{}
	var worst float64
	for _, f := range r.Faults {
		kinds[f.Kind]++
		worst = max(worst, f.RecoverySeconds)
	}
	fmt.Fprintf(w, "- Faults: %d master kills (SIGKILL, restarted), %d etcd restarts, %d metastore restarts; slowest recovery %.1f s\n\n",
		kinds[faultMasterKill], kinds[faultEtcdRestart], kinds[faultMetastoreRestart], worst)
	fmt.Fprintln(w, "| figure | mean | slope per hour | ± std. error | samples (segments) | per sidecar |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, s := range r.Slopes {
		se := "–"
		if s.StdErrPerHour >= 0 {
			se = fmt.Sprintf("%.3g", s.StdErrPerHour)
		}
		var per []string
		for _, m := range sortedKeysOf(s.PerMember) {
			per = append(per, fmt.Sprintf("%s %+.3g", m, s.PerMember[m]))
		}
		fmt.Fprintf(w, "| %s (%s) | %.4g | %+.3g | %s | %d (%d) | %s |\n", s.Name, s.Unit, s.Mean, s.PerHour, se, s.Samples, s.Segments, strings.Join(per, ", "))
	}
	f := r.Final
	fmt.Fprintf(w, "\nFinal check: %s — metastore at event %d (%d databases, %d tables, %d partitions); master cursor %d; member cursors %v; FEs applied %v",
		okWord(f.OK), f.MetastoreEventID, f.Databases, f.Tables, f.Partitions, f.MasterCursor, f.MemberCursors, f.FEAppliedEventIDs)
	if f.OK {
		fmt.Fprintf(w, "; every FE held the metastore's state %.1f s after the workload stopped.\n", f.ConvergedAfterSeconds)
	} else {
		fmt.Fprintf(w, ".\nProblems: %s\n", strings.Join(f.Problems, "; "))
	}
	fmt.Fprintln(w)
	for _, ft := range r.Faults {
		e := ""
		if ft.Error != "" {
			e = " ERROR: " + ft.Error
		}
		fmt.Fprintf(w, "- %6.0fs %s: %s (recovered in %.1f s)%s\n", ft.AtSeconds, ft.Kind, ft.Detail, ft.RecoverySeconds, e)
	}
}

func sortedKeysOf(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// WriteJSON writes the report as one indented JSON object.
func (r *SoakReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteJSONFile writes the report as WriteJSON does, to the file at path.
func (r *SoakReport) WriteJSONFile(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench soak: --json-file: %w", err)
	}
	return nil
}
