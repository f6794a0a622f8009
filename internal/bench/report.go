package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Figures are one dialect's figures, each the median over the runs.
type Figures struct {
	// 1. Backlog drain: the master, and the slowest follower (to having
	// applied or advanced to the last event), from the master's first commit.
	DrainEPS         float64 `json:"drain_events_per_sec"`
	FollowerDrainEPS float64 `json:"follower_drain_events_per_sec"`
	// 2. The raw limit and the ratio.
	RawFetchEPS float64 `json:"raw_fetch_events_per_sec"`
	DrainToRaw  float64 `json:"drain_to_raw_ratio"`
	// 3. Follower lag after each master commit of the steady phase; during
	// the drain for comparison.
	LagP50      float64 `json:"follower_lag_p50_ms"`
	LagP99      float64 `json:"follower_lag_p99_ms"`
	LagSamples  int     `json:"follower_lag_samples_per_run"`
	DrainLagP50 float64 `json:"follower_lag_during_drain_p50_ms"`
	DrainLagP99 float64 `json:"follower_lag_during_drain_p99_ms"`
	// 4. Steady state: append → applied on every FE.
	SteadyP50     float64 `json:"steady_p50_ms"`
	SteadyP99     float64 `json:"steady_p99_ms"`
	SteadyEPS     float64 `json:"steady_events_per_sec"`
	SteadySubject string  `json:"steady_applied_means"`
	// 4. Metastore calls (polls and fetches) per minute of an idle log.
	IdleCallsPerMin float64 `json:"metastore_calls_per_idle_minute"`
	// 5. FE statements (doris: REFRESH statements; native: batches posted to
	// the master's FE) per 1,000 events, and per table / object each batch
	// touched.
	StatementsPer1k        float64   `json:"fe_statements_per_1k_events"`
	StatementsPerTable     float64   `json:"fe_statements_per_affected_table"`
	StatementsPerObject    float64   `json:"fe_statements_per_affected_object"`
	BatchesPer1k           float64   `json:"batches_per_1k_events"`
	EtcdWritesPerBatch     float64   `json:"etcd_writes_per_batch"`
	EtcdMasterPutsPerBatch float64   `json:"etcd_master_cursor_puts_per_batch"`
	EtcdMemberPutsPerBatch float64   `json:"etcd_member_cursor_puts_per_batch"`
	PeakRSSMiB             float64   `json:"peak_rss_mib"`
	PeakRSSMasterMiB       float64   `json:"peak_rss_master_mib"`
	PeakRSSFollowerMiB     float64   `json:"peak_rss_follower_max_mib"`
	CPUPer100k             float64   `json:"cpu_sec_per_100k_events"`
	CPUPer100kMaster       float64   `json:"cpu_sec_per_100k_events_master"`
	CPUPer100kFollowerMax  float64   `json:"cpu_sec_per_100k_events_follower_max"`
	RunsDrainEPS           []float64 `json:"runs_drain_events_per_sec"`
	// Where the master's time goes during the drain (mean ms per fetch, per
	// decode of a fetch, per apply and per commit, from its /metrics), and what the bench process itself (the fake
	// metastore and FEs, etcd) spent, which competes for the same cores.
	MasterStageMS map[string]float64 `json:"master_batch_stage_ms"`
	// The same over the steady phase: where an event's time goes after the
	// poll that finds it (figure 4).
	SteadyStageMS map[string]float64 `json:"master_steady_batch_stage_ms"`
	// Where the last run ended: the last event appended, each member's
	// cursor and (native) each FE's applied event id, all equal to it when
	// the run finished.
	LastEventID       int64   `json:"last_event_id"`
	MemberCursors     []int64 `json:"member_cursors"`
	FEAppliedEventIDs []int64 `json:"fe_applied_event_ids,omitempty"`
	BenchCPUPer100k   float64 `json:"bench_process_cpu_sec_per_100k_events"`
}

// inFE is the in-FE design's ceiling at its defaults (reference doris.md §1).
type inFE struct {
	BatchPerTick      int     `json:"batch_per_tick"`
	TickMS            float64 `json:"tick_ms"`
	EventsPerSec      float64 `json:"events_per_sec"`
	FollowerWakeupMax float64 `json:"follower_wakeup_max_ms"`
}

func inFECeiling() inFE {
	return inFE{BatchPerTick: 500, TickMS: 10000, EventsPerSec: 500 / 10.0, FollowerWakeupMax: 10000}
}

// Report is the bench's output. The embedded figures at the top level are
// the worse of the dialects measured for each figure (the slower rate, the
// longer latency, the larger footprint), except the FE statements, which are the
// doris dialect's when it ran; Dialects holds each dialect's own figures.
type Report struct {
	Figures
	Machine            string              `json:"machine"`
	GoVersion          string              `json:"go_version"`
	LoadBefore         string              `json:"load_average_before"`
	LoadAfter          string              `json:"load_average_after"`
	Command            string              `json:"command"`
	Events             int                 `json:"events"`
	Runs               int                 `json:"runs"`
	BatchSize          int                 `json:"batch_size"`
	PollIntervalMS     float64             `json:"poll_interval_ms"`
	BusyPollIntervalMS float64             `json:"busy_poll_interval_ms"`
	IdleSeconds        float64             `json:"idle_seconds"`
	FELatencyMS        float64             `json:"fe_latency_ms"`
	SteadyRate         float64             `json:"steady_rate_events_per_sec"`
	SteadySeconds      float64             `json:"steady_seconds"`
	Seconds            float64             `json:"seconds"`
	Dialects           map[string]*Figures `json:"dialects"`
	InFE               inFE                `json:"in_fe_ceiling"`
}

// figuresOf takes the median of each figure over the runs.
func figuresOf(runs []runSample, raw float64) *Figures {
	f := &Figures{RawFetchEPS: raw}
	med := func(get func(s runSample) float64) float64 {
		var xs []float64
		for _, s := range runs {
			if v := get(s); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		return median(xs)
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	f.DrainEPS = med(func(s runSample) float64 { return s.drainMasterEPS })
	for _, s := range runs {
		f.RunsDrainEPS = append(f.RunsDrainEPS, math.Round(s.drainMasterEPS))
	}
	f.FollowerDrainEPS = med(func(s runSample) float64 { return minOf(s.drainFollowerEPS) })
	if raw > 0 {
		f.DrainToRaw = f.DrainEPS / raw
	}
	f.LagP50 = med(func(s runSample) float64 { return percentile(s.steadyLagMS, 0.5) })
	f.LagP99 = med(func(s runSample) float64 { return percentile(s.steadyLagMS, 0.99) })
	f.LagSamples = int(med(func(s runSample) float64 { return float64(len(s.steadyLagMS)) }))
	f.DrainLagP50 = med(func(s runSample) float64 { return percentile(s.drainLagMS, 0.5) })
	f.DrainLagP99 = med(func(s runSample) float64 { return percentile(s.drainLagMS, 0.99) })
	f.SteadyP50 = med(func(s runSample) float64 { return percentile(s.steadyLatencyMS, 0.5) })
	f.SteadyP99 = med(func(s runSample) float64 { return percentile(s.steadyLatencyMS, 0.99) })
	f.SteadyEPS = med(func(s runSample) float64 { return s.steadyRate })
	f.IdleCallsPerMin = med(func(s runSample) float64 { return s.idleCallsPerMin })
	if len(runs) > 0 {
		f.SteadySubject = runs[0].steadyLatencySubject
	}
	statements := func(s runSample) float64 {
		if s.refreshStatements > 0 || s.feRequests == 0 {
			return float64(s.refreshStatements)
		}
		return float64(s.feRequests)
	}
	f.StatementsPer1k = med(func(s runSample) float64 { return statements(s) / float64(s.drainEvents) * 1000 })
	f.StatementsPerTable = med(func(s runSample) float64 { return statements(s) / float64(s.affectedTables) })
	f.StatementsPerObject = med(func(s runSample) float64 { return statements(s) / float64(s.affectedObjects) })
	f.BatchesPer1k = med(func(s runSample) float64 { return float64(s.drainBatches) / float64(s.drainEvents) * 1000 })
	f.EtcdWritesPerBatch = med(func(s runSample) float64 { return float64(s.etcdRevs) / float64(s.drainBatches) })
	f.EtcdMasterPutsPerBatch = med(func(s runSample) float64 { return float64(s.etcdPuts[keyMasterCursor]) / float64(s.drainBatches) })
	f.EtcdMemberPutsPerBatch = med(func(s runSample) float64 { return float64(s.etcdPuts[keyMemberCursor]) / float64(s.drainBatches) })
	role := func(s runSample, master bool, xs []float64) float64 {
		v := math.NaN()
		for i, x := range xs {
			if (i == s.masterIndex) == master && (math.IsNaN(v) || x > v) {
				v = x
			}
		}
		return v
	}
	rss := func(s runSample) []float64 {
		out := make([]float64, len(s.peakRSS))
		for i, b := range s.peakRSS {
			out[i] = mib(b)
		}
		return out
	}
	f.PeakRSSMasterMiB = med(func(s runSample) float64 { return role(s, true, rss(s)) })
	f.PeakRSSFollowerMiB = med(func(s runSample) float64 { return role(s, false, rss(s)) })
	f.PeakRSSMiB = max(f.PeakRSSMasterMiB, f.PeakRSSFollowerMiB)
	f.CPUPer100kMaster = med(func(s runSample) float64 { return role(s, true, s.cpuPer100k) })
	f.CPUPer100kFollowerMax = med(func(s runSample) float64 { return role(s, false, s.cpuPer100k) })
	f.CPUPer100k = max(f.CPUPer100kMaster, f.CPUPer100kFollowerMax)
	if len(runs) > 0 {
		last := runs[len(runs)-1]
		f.LastEventID, f.MemberCursors, f.FEAppliedEventIDs = last.lastEventID, last.memberCursors, last.feApplied
	}
	f.BenchCPUPer100k = med(func(s runSample) float64 { return s.benchCPUPer100k })
	f.MasterStageMS, f.SteadyStageMS = map[string]float64{}, map[string]float64{}
	for _, k := range []string{"fetch", "decode", "apply", "commit"} {
		f.MasterStageMS[k] = med(func(s runSample) float64 { return s.stageMS[k] })
		f.SteadyStageMS[k] = med(func(s runSample) float64 { return s.steadyStageMS[k] })
	}
	return f
}

// headline fills the top-level figures: the worse of the dialects.
func (r *Report) headline(dialects []string) {
	first := true
	for _, d := range dialects {
		f := r.Dialects[d]
		if first {
			r.Figures = *f
			r.RunsDrainEPS = nil
			r.MasterStageMS, r.SteadyStageMS = nil, nil
			r.MemberCursors, r.FEAppliedEventIDs = nil, nil
			r.SteadySubject = ""
			first = false
			continue
		}
		h := &r.Figures
		h.DrainEPS = min(h.DrainEPS, f.DrainEPS)
		h.FollowerDrainEPS = min(h.FollowerDrainEPS, f.FollowerDrainEPS)
		h.DrainToRaw = min(h.DrainToRaw, f.DrainToRaw)
		for _, p := range [][2]*float64{
			{&h.LagP50, &f.LagP50}, {&h.LagP99, &f.LagP99}, {&h.DrainLagP50, &f.DrainLagP50}, {&h.DrainLagP99, &f.DrainLagP99},
			{&h.SteadyP50, &f.SteadyP50}, {&h.SteadyP99, &f.SteadyP99}, {&h.EtcdWritesPerBatch, &f.EtcdWritesPerBatch},
			{&h.EtcdMasterPutsPerBatch, &f.EtcdMasterPutsPerBatch}, {&h.EtcdMemberPutsPerBatch, &f.EtcdMemberPutsPerBatch},
			{&h.PeakRSSMiB, &f.PeakRSSMiB}, {&h.PeakRSSMasterMiB, &f.PeakRSSMasterMiB}, {&h.PeakRSSFollowerMiB, &f.PeakRSSFollowerMiB},
			{&h.CPUPer100k, &f.CPUPer100k}, {&h.CPUPer100kMaster, &f.CPUPer100kMaster}, {&h.CPUPer100kFollowerMax, &f.CPUPer100kFollowerMax},
			{&h.BatchesPer1k, &f.BatchesPer1k}, {&h.IdleCallsPerMin, &f.IdleCallsPerMin},
		} {
			*p[0] = max(*p[0], *p[1])
		}
		h.SteadyEPS = min(h.SteadyEPS, f.SteadyEPS)
		h.LagSamples = min(h.LagSamples, f.LagSamples)
	}
	if f, ok := r.Dialects["doris"]; ok {
		r.StatementsPer1k, r.StatementsPerTable, r.StatementsPerObject = f.StatementsPer1k, f.StatementsPerTable, f.StatementsPerObject
	}
}

// WriteTable prints the report as a Markdown table, ready for BENCHMARKS.md.
func (r *Report) WriteTable(w io.Writer) {
	var ds []string
	for _, d := range []string{"doris", "native"} {
		if r.Dialects[d] != nil {
			ds = append(ds, d)
		}
	}
	fmt.Fprintf(w, "- Command: `%s`\n", r.Command)
	fmt.Fprintf(w, "- Machine: %s; %s; load average %s before, %s after (1, 5, 15 min)\n", r.Machine, r.GoVersion, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "- Setup: %d-event backlog, batch size %d, poll interval %s (busy %s), FE %s per statement, steady phase %.0f events/s for %.0fs, idle phase %.0fs; median of %d runs per dialect (%.0fs in all)\n\n",
		r.Events, r.BatchSize, fmtMS(r.PollIntervalMS), fmtMS(r.BusyPollIntervalMS), fmtMS(r.FELatencyMS), r.SteadyRate, r.SteadySeconds, r.IdleSeconds, r.Runs, r.Seconds)
	fmt.Fprintf(w, "| figure | %s | goal |\n|---|%s---|\n", strings.Join(ds, " | "), strings.Repeat("---|", len(ds)))
	row := func(name, goal string, cell func(f *Figures) string) {
		var cells []string
		for _, d := range ds {
			cells = append(cells, cell(r.Dialects[d]))
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", name, strings.Join(cells, " | "), goal)
	}
	drainGoal := 20000.0
	row("1. backlog drain, master (events/s)", "≥ 20,000", func(f *Figures) string {
		return mark(thousands(f.DrainEPS), f.DrainEPS >= drainGoal)
	})
	row("1. backlog drain, slowest follower (events/s)", "", func(f *Figures) string { return thousands(f.FollowerDrainEPS) })
	row("2. raw fetch, same log and batch size (events/s)", "", func(f *Figures) string { return thousands(f.RawFetchEPS) })
	row("2. drain / raw", "≥ 0.5", func(f *Figures) string { return mark(fmt.Sprintf("%.2f", f.DrainToRaw), f.DrainToRaw >= 0.5) })
	row("3. follower lag after a master commit, p50 / p99 (ms)", "p99 ≤ 100", func(f *Figures) string {
		return mark(fmt.Sprintf("%.1f / %.1f", f.LagP50, f.LagP99), f.LagP99 <= 100)
	})
	row("3. … during the drain, p50 / p99 (ms)", "", func(f *Figures) string { return fmt.Sprintf("%.1f / %.1f", f.DrainLagP50, f.DrainLagP99) })
	row(fmt.Sprintf("4. steady latency at %.0f events/s, append → applied on every FE, p50 / p99 (ms)", r.SteadyRate),
		"p99 ≤ 300 ms", func(f *Figures) string {
			return mark(fmt.Sprintf("%.0f / %.0f", f.SteadyP50, f.SteadyP99), f.SteadyP99 <= steadyP99GoalMS)
		})
	if r.IdleSeconds > 0 {
		today := 60000 / r.PollIntervalMS
		row("4. metastore calls per idle minute (polls and fetches)", fmt.Sprintf("≤ %.0f (one per poll interval)", today), func(f *Figures) string {
			// One poll more than the interval allows when the window
			// catches both ends.
			return mark(fmt.Sprintf("%.1f", f.IdleCallsPerMin), f.IdleCallsPerMin <= today+60/r.IdleSeconds)
		})
	}
	row("5. FE statements per 1,000 events (doris: REFRESH; native: batches)", "", func(f *Figures) string { return fmt.Sprintf("%.1f", f.StatementsPer1k) })
	row("5. FE statements per table touched by the batch", "≤ 1", func(f *Figures) string {
		return mark(fmt.Sprintf("%.3f", f.StatementsPerTable), f.StatementsPerTable <= 1)
	})
	row("5. … per object to reload (tables, table lists, database list)", "", func(f *Figures) string { return fmt.Sprintf("%.3f", f.StatementsPerObject) })
	row("6. etcd writes per batch (master cursor + member cursors)", "", func(f *Figures) string {
		return fmt.Sprintf("%.2f (%.2f + %.2f)", f.EtcdWritesPerBatch, f.EtcdMasterPutsPerBatch, f.EtcdMemberPutsPerBatch)
	})
	row("7. peak RSS per sidecar, master / largest follower (MiB)", "≤ 64", func(f *Figures) string {
		return mark(fmt.Sprintf("%.1f / %.1f", f.PeakRSSMasterMiB, f.PeakRSSFollowerMiB), f.PeakRSSMiB <= 64)
	})
	row("7. CPU seconds per 100,000 events, master / busiest follower", "", func(f *Figures) string {
		return fmt.Sprintf("%.2f / %.2f", f.CPUPer100kMaster, f.CPUPer100kFollowerMax)
	})
	row("7. … the bench process (fake metastore and FEs, etcd) on the same cores", "", func(f *Figures) string {
		return fmt.Sprintf("%.2f", f.BenchCPUPer100k)
	})
	stages := func(m map[string]float64) string {
		return fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", m["fetch"], m["decode"], m["apply"], m["commit"])
	}
	row("master's mean time in the drain per fetch / decode of a fetch / apply / commit (ms)", "", func(f *Figures) string {
		return stages(f.MasterStageMS)
	})
	row("… in the steady phase (the step after the poll that finds an event)", "", func(f *Figures) string {
		return stages(f.SteadyStageMS)
	})
	in := r.InFE
	row(fmt.Sprintf("8. in-FE design at its defaults (%d events per %.0f s tick)", in.BatchPerTick, in.TickMS/1000),
		"", func(*Figures) string {
			return fmt.Sprintf("%.0f events/s; follower wake-up ≤ %.0f ms", in.EventsPerSec, in.FollowerWakeupMax)
		})
	fmt.Fprintln(w)
	for _, d := range ds {
		f := r.Dialects[d]
		fmt.Fprintf(w, "%s: drain per run %v events/s; steady latency means %s; %d follower-lag samples per run; steady rate reached %.0f events/s.\n",
			d, f.RunsDrainEPS, f.SteadySubject, f.LagSamples, f.SteadyEPS)
	}
}

func mark(s string, ok bool) string {
	if ok {
		return s + " ✓"
	}
	return s + " ✗"
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtMS(v float64) string {
	if v >= 1000 && math.Mod(v, 1000) == 0 {
		return fmt.Sprintf("%.0f s", v/1000)
	}
	return fmt.Sprintf("%g ms", v)
}

// median of xs; NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the nearest-rank p-quantile of xs; NaN for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func minOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Min(xs)
}

// unmeasured replaces NaN figures (nothing to take a median of, e.g. no
// follower lag sample in a tiny run) by -1, which JSON can carry.
func (r *Report) unmeasured() {
	fix := func(f *Figures) {
		v := reflect.ValueOf(f).Elem()
		for i := range v.NumField() {
			if fv := v.Field(i); fv.Kind() == reflect.Float64 && math.IsNaN(fv.Float()) {
				fv.SetFloat(-1)
			}
		}
	}
	fix(&r.Figures)
	for _, f := range r.Dialects {
		fix(f)
	}
}

// steadyP99GoalMS is issue 15's goal for the steady latency's p99.
const steadyP99GoalMS = 300

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteJSONFile writes the report as WriteJSON does, to the file at path.
func (r *Report) WriteJSONFile(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: --json-file: %w", err)
	}
	return nil
}
