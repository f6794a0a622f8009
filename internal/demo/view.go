package demo

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// view renders the state: per member role, cursor and lag; per FE what it
// applied.
type view struct {
	o         Options
	members   []*member
	hms       *hmstest.Server
	fes       []*fetest.Server
	feCluster *fetest.Cluster
	start     time.Time
	drawn     bool
	events    []string // the story so far, shown under the table
}

// divergence says why the FEs have not converged yet ("" when they have).
func (v *view) divergence() string {
	want := v.hms.Snapshot()
	cur := v.hms.CurrentEventID()
	if v.feCluster != nil {
		if d := fetest.Diff(want, v.feCluster.Snapshot(catalog)); d != "" {
			return "Doris cluster cache differs from the metastore: " + firstLine(d)
		}
		for _, m := range v.members {
			m.mu.Lock()
			sc := m.sc
			m.mu.Unlock()
			if sc != nil && sc.Agent.Status().Catalogs[0].MasterCursor != cur {
				return fmt.Sprintf("master cursor %d, metastore at %d", sc.Agent.Status().Catalogs[0].MasterCursor, cur)
			}
		}
		return ""
	}
	for i, fe := range v.fes {
		if got := fe.AppliedEventID(catalog); got != cur {
			return fmt.Sprintf("FE %d applied up to event %d, metastore at %d", i+1, got, cur)
		}
		if d := fetest.Diff(want, fe.Snapshot(catalog)); d != "" {
			return fmt.Sprintf("FE %d cache differs from the metastore: %s", i+1, firstLine(d))
		}
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

type memberRow struct {
	name, role, state string
	cursor, lag       int64
	refreshes         int
}

func (v *view) rows() []memberRow {
	var rows []memberRow
	for _, m := range v.members {
		m.mu.Lock()
		sc, state := m.sc, m.state
		m.mu.Unlock()
		r := memberRow{name: m.name, state: state, role: "-", cursor: -1}
		if sc != nil {
			st := sc.Agent.Status()
			r.role = st.Role
			c := st.Catalogs[0]
			r.cursor, r.lag, r.refreshes = c.Cursor, c.LagEvents, c.FullRefreshes
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return rows
}

func (v *view) feLine(i int) string {
	fe := v.fes[i]
	if v.feCluster != nil {
		return fmt.Sprintf("FE %d  %d statements received by this endpoint", i+1, len(fe.Statements()))
	}
	n, full := 0, 0
	for _, b := range fe.Changes() {
		if b.FullRefresh {
			full++
		}
		n += len(b.Changes)
	}
	return fmt.Sprintf("FE %d  applied up to event %-6d  %5d changes, %d full refreshes", i+1, fe.AppliedEventID(catalog), n, full)
}

// draw redraws the live view in place (a terminal).
func (v *view) draw(say func(string, ...any), final bool) {
	var b strings.Builder
	if v.drawn {
		b.WriteString("\x1b[H\x1b[J")
	} else {
		b.WriteString("\x1b[2J\x1b[H")
		v.drawn = true
	}
	fmt.Fprintf(&b, "hmssync demo (%s dialect) — %.1fs — metastore at event %d\n\n", v.o.Dialect, time.Since(v.start).Seconds(), v.hms.CurrentEventID())
	fmt.Fprintf(&b, "%-10s %-9s %-8s %8s %6s %14s\n", "member", "role", "state", "cursor", "lag", "full refreshes")
	for _, r := range v.rows() {
		fmt.Fprintf(&b, "%-10s %-9s %-8s %8d %6d %14d\n", r.name, r.role, r.state, r.cursor, r.lag, r.refreshes)
	}
	b.WriteString("\n")
	for i := range v.fes {
		b.WriteString(v.feLine(i) + "\n")
	}
	if v.feCluster != nil {
		fmt.Fprintf(&b, "cluster cache: %s\n", convergedWord(fetest.Diff(v.hms.Snapshot(), v.feCluster.Snapshot(catalog)) == ""))
	}
	if !final {
		fmt.Fprintf(&b, "\n%s\n", convergedWord(v.divergence() == ""))
	}
	b.WriteString("\n")
	for _, e := range v.events {
		b.WriteString(e + "\n")
	}
	fmt.Fprint(v.o.Out, b.String())
}

func convergedWord(ok bool) string {
	if ok {
		return "in step with the metastore"
	}
	return "catching up"
}

// plain prints one progress line (not a terminal).
func (v *view) plain(say func(string, ...any)) {
	var parts []string
	for _, r := range v.rows() {
		if r.state != "running" {
			parts = append(parts, fmt.Sprintf("%s %s", r.name, r.state))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s cursor=%d lag=%d", r.name, r.role, r.cursor, r.lag))
	}
	if v.feCluster == nil {
		var fe []string
		for _, f := range v.fes {
			fe = append(fe, fmt.Sprint(f.AppliedEventID(catalog)))
		}
		parts = append(parts, "FEs applied "+strings.Join(fe, "/"))
	}
	say("hms=%d | %s", v.hms.CurrentEventID(), strings.Join(parts, " | "))
}
