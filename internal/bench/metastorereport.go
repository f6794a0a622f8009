package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// WriteTable prints the report as Markdown tables: every rate with its
// min/median/max over the rounds and its ratio to the same round's raw fetch,
// then each sidecar's own figures (medians).
func (r *MetastoreReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "Backlog (%d, %d] at %s: %s events, %.1f MB of messages, %s descriptors; batch size %d; %d rounds, interleaved\n",
		r.From, r.To, r.HMS, thousands(float64(r.Events)), float64(r.MessageBytes)/1e6, thousands(float64(r.Descriptors)), r.BatchSize, r.Rounds)
	fmt.Fprintf(w, "Machine: %s, GOMAXPROCS %d, %s; load average %s before, %s after; %.0f s\n", r.Machine, r.GOMAXPROCS, r.GoVersion, r.LoadBefore, r.LoadAfter, r.Seconds)
	fmt.Fprintf(w, "Command: %s\n\n", r.Command)
	fmt.Fprintln(w, "| figure (events/s) | min | median | max | ÷ raw fetch, min / median / max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, f := range r.Figures {
		e, q := f.EventsPerSec, f.ToRaw
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f / %.2f / %.2f |\n", f.Name, thousands(e.Min), thousands(e.Median), thousands(e.Max), q.Min, q.Median, q.Max)
	}
	if len(r.Sidecars) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Sidecars (medians over the rounds; drain from the first commit beyond the seeded cursor to the commit reaching the end, as `hmssync bench`):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| sidecar | dialect | drain from election (events/s) | commits | CPU s | CPU s / 100k events | peak RSS MiB | fetch ms / call | decode ms / fetch | apply ms / batch | commit ms | fetch / decode / apply / commit s total |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.Sidecars {
		note := ""
		if s.FirstCommitFallback > 0 {
			note = fmt.Sprintf(" (%d of %d rounds one commit: drain measured from the election)", s.FirstCommitFallback, len(s.DrainEPS.Runs))
		}
		fmt.Fprintf(w, "| %s | %s%s | %s | %.0f | %.2f | %.2f | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f / %.1f / %.1f |\n",
			s.Label, s.Dialect, note, thousands(s.FromElectedEPS.Median), s.Commits.Median, s.CPUSeconds.Median, s.CPUPer100k.Median, s.PeakRSSMiB.Median,
			s.StageMS["fetch"].Median, s.StageMS["decode"].Median, s.StageMS["apply"].Median, s.StageMS["commit"].Median,
			s.StageSeconds["fetch"].Median, s.StageSeconds["decode"].Median, s.StageSeconds["apply"].Median, s.StageSeconds["commit"].Median)
	}
}

// WriteJSON prints the report as one JSON object.
func (r *MetastoreReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteJSONFile writes the JSON object to path.
func (r *MetastoreReport) WriteJSONFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench metastore: --json-file: %w", err)
	}
	if err := r.WriteJSON(f); err != nil {
		f.Close()
		return fmt.Errorf("bench metastore: --json-file %s: %w", path, err)
	}
	return f.Close()
}
