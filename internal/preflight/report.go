package preflight

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteText writes one line per result, ✓ or ✗, with the fix indented under
// each failure, and a last line counting the failures.
func WriteText(w io.Writer, rs []Result) error {
	failed := 0
	for _, r := range rs {
		mark := "✓"
		if !r.OK {
			mark = "✗"
			failed++
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
	var err error
	if failed == 0 {
		_, err = fmt.Fprintf(w, "all %d checks passed\n", len(rs))
	} else {
		_, err = fmt.Fprintf(w, "%d of %d checks failed\n", failed, len(rs))
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
