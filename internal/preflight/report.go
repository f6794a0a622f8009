package preflight

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteText writes one line per result, ✓, ✗ or ? (could not be verified),
// with the fix indented under each failure, and a last line counting the
// failures.
func WriteText(w io.Writer, rs []Result) error {
	failed, unverified := 0, 0
	for _, r := range rs {
		mark := "✓"
		switch {
		case !r.OK:
			mark = "✗"
			failed++
		case r.Unverified:
			mark = "?"
			unverified++
		}
		line := mark + " " + r.Check
		if r.Detail != "" {
			line += ": " + r.Detail
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
		if !r.OK && r.Fix != "" {
			if _, err := fmt.Fprintln(w, "    fix: "+r.Fix); err != nil {
				return err
			}
		}
	}
	tail := ""
	if unverified > 0 {
		tail = fmt.Sprintf(" (%d could not be verified)", unverified)
	}
	var err error
	if failed == 0 {
		_, err = fmt.Fprintf(w, "all %d checks passed%s\n", len(rs), tail)
	} else {
		_, err = fmt.Fprintf(w, "%d of %d checks failed%s\n", failed, len(rs), tail)
	}
	return err
}

// report is the --json form.
type report struct {
	OK     bool     `json:"ok"`
	Checks []Result `json:"checks"`
}

// WriteJSON writes {"ok":bool,"checks":[…]} on one line.
func WriteJSON(w io.Writer, rs []Result) error {
	if rs == nil {
		rs = []Result{}
	}
	return json.NewEncoder(w).Encode(report{OK: Passed(rs), Checks: rs})
}
