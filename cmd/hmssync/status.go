package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/cursorstore"
)

// statusCommand shows the cluster as etcd holds it: the master, the pause, each
// catalog's committed cursor and the metastore's current event id (as the
// master last read it), every member's role, FE, cursors, lag behind the master
// cursor and behind the metastore, failing metastore reads, last error and
// lease.
func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show members, roles, cursors, the metastore's current event id and the lag behind it, read from etcd",
		ArgsUsage: " ",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"},
		}, etcdFlags()...),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return fmt.Errorf("status takes no arguments, got %q", c.Args().Slice())
			}
			store, cli, err := openStore(c)
			if err != nil {
				return err
			}
			defer cli.Close()
			cs, err := store.Statuses(c.Context)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(cs)
			}
			return printStatus(c.App.Writer, cs, time.Now())
		},
	}
}

func printStatus(w io.Writer, cs cursorstore.ClusterStatus, now time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s (etcd revision %d)\n", cs.Root, cs.Revision)
	switch {
	case cs.Master == "":
		b.WriteString("master:  none (no candidate in the election)\n")
	default:
		fmt.Fprintf(&b, "master:  %s (succession: %s)\n", cs.Master, strings.Join(cs.Candidates, ", "))
	}
	if cs.Paused {
		fmt.Fprintf(&b, "%s: the master does not advance until %s/pause is deleted; the lag behind the metastore grows meanwhile\n", pausedLine(cs, now), cs.Root)
	}
	var cursors []string
	for _, cat := range slices.Sorted(maps.Keys(cs.MasterCursors)) {
		cursors = append(cursors, fmt.Sprintf("%s=%d (epoch %d)", cat, cs.MasterCursors[cat], cs.Epochs[cat]))
	}
	fmt.Fprintf(&b, "cursors: %s\n", orDash(strings.Join(cursors, " ")))
	var hms []string
	for _, cat := range slices.Sorted(maps.Keys(cs.Metastore)) {
		v := cs.Metastore[cat]
		hms = append(hms, fmt.Sprintf("%s=%d (lag %s, read %s by %s)", cat, v.CurrentEventID, optInt(v.Lag), ago(now, v.ReadAt), v.ReadBy))
	}
	fmt.Fprintf(&b, "metastore: %s\n", orDash(strings.Join(hms, " ")))
	for _, p := range cs.Problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	b.WriteString("\n")

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tROLE\tLEASE\tFE\tVERSION\tUPDATED\tCATALOG\tCURSOR\tLAG\tHMS LAG\tHEALS\tMETASTORE\tLAST ERROR")
	for _, m := range cs.Members {
		lease, updated := "-", "-"
		if m.LeaseTTL >= 0 {
			lease = fmt.Sprintf("%ds", m.LeaseTTL)
		}
		if !m.Time.IsZero() {
			updated = ago(now, m.Time)
		}
		head := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", m.Member, m.Role, lease, orDash(m.FEURL), orDash(m.Version), updated)
		cats := slices.Sorted(maps.Keys(m.Catalogs))
		if len(cats) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\n", head)
		}
		for i, cat := range cats {
			if i > 0 {
				head = "\t\t\t\t\t"
			}
			mc := m.Catalogs[cat]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", head, cat, optInt(mc.Cursor), optInt(mc.Lag), optInt(mc.MetastoreLag),
				heals(mc, now), metastoreReads(m, mc, now), lastError(mc, now))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pausedLine is the pause in one line: since when (pause_since), how long,
// and the operator's note.
func pausedLine(cs cursorstore.ClusterStatus, now time.Time) string {
	since := "an unknown time (no master has held for it yet)"
	if !cs.PausedSince.IsZero() {
		since = cs.PausedSince.UTC().Format(time.RFC3339) + ", " + ago(now, cs.PausedSince)
	}
	reason := cs.PauseReason
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("PAUSED since %s (%s)", since, reason)
}

// maxMetastoreErrorCell bounds the error quoted in the METASTORE cell; --json
// and /status have it whole.
const maxMetastoreErrorCell = 120

// metastoreReads is a member's reads of a catalog's metastore in a cell: ok,
// or failing for how long, with the error unless LAST ERROR shows it already
// (a failing step's error is usually the failed read itself).
func metastoreReads(m cursorstore.MemberView, mc cursorstore.MemberCatalog, now time.Time) string {
	switch {
	case !m.Live:
		return "-"
	case mc.MetastoreError == "":
		return "ok"
	}
	cell := "failing for " + max(now.Sub(mc.MetastoreFailingSince), 0).Truncate(time.Second).String()
	if strings.Contains(mc.LastError, mc.MetastoreError) {
		return cell
	}
	e := mc.MetastoreError
	if len(e) > maxMetastoreErrorCell {
		e = strings.ToValidUTF8(e[:maxMetastoreErrorCell], "") + "…"
	}
	return cell + ": " + e
}

// ago is how long before now t was, to the second.
func ago(now, t time.Time) string {
	return max(now.Sub(t), 0).Truncate(time.Second).String() + " ago"
}

// heals is a catalog's self-heals in a cell: how many, and the last one with
// its age.
func heals(mc cursorstore.MemberCatalog, now time.Time) string {
	if mc.SelfHeals == 0 {
		return "-"
	}
	s := fmt.Sprintf("%d (last: %s", mc.SelfHeals, mc.LastHeal)
	if !mc.LastHealTime.IsZero() {
		s += ", " + ago(now, mc.LastHealTime)
	}
	return s + ")"
}

// lastError is a catalog's last error in a cell, with its age.
func lastError(mc cursorstore.MemberCatalog, now time.Time) string {
	if mc.LastError == "" {
		return "-"
	}
	if mc.LastErrorTime.IsZero() {
		return mc.LastError
	}
	return fmt.Sprintf("%s (%s ago)", mc.LastError, now.Sub(mc.LastErrorTime).Truncate(time.Second))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func optInt(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}
