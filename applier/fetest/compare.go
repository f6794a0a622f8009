package fetest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Diff describes how got differs from want, "" if they hold the same databases,
// tables and partitions. A nil and an empty partition list are the same (an
// unpartitioned table). Use it to compare Snapshot with a metastore's truth.
func Diff(want, got Truth) string {
	var out []string
	for _, db := range union(want, got) {
		w, inW := want[db]
		g, inG := got[db]
		switch {
		case !inG:
			out = append(out, fmt.Sprintf("database %q missing", db))
			continue
		case !inW:
			out = append(out, fmt.Sprintf("database %q unexpected", db))
			continue
		}
		for _, t := range union(w, g) {
			wp, inW := w[t]
			gp, inG := g[t]
			switch {
			case !inG:
				out = append(out, fmt.Sprintf("table %q.%q missing", db, t))
			case !inW:
				out = append(out, fmt.Sprintf("table %q.%q unexpected", db, t))
			default:
				wp, gp = sortedCopy(wp), sortedCopy(gp)
				if !slices.Equal(wp, gp) {
					out = append(out, fmt.Sprintf("table %q.%q: partitions %v, want %v", db, t, gp, wp))
				}
			}
		}
	}
	return strings.Join(out, "; ")
}

func union[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
