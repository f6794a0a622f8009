package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

func TestStatusShowsMasterMembersAndLag(t *testing.T) {
	srv := etcdtest.New(t)
	ep := srv.Endpoints()[0]
	store := cursorstore.New(srv.Client, "", "test", time.Second, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	t.Cleanup(func() { cancel(); <-done; <-done })

	el, err := election.New(election.Config{Client: srv.Client, Prefix: store.ElectionPrefix(), Name: "fe-a"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { el.Run(ctx); done <- struct{}{} }()
	const leaseTTL = 10 * time.Second
	pub, err := store.NewStatusPublisher("fe-a", leaseTTL, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() { pub.Run(ctx); done <- struct{}{} }()
	// An error of several words, as a real one is: the table must show it whole.
	const lastErr = "applying batch (100, 120]: FE http://127.0.0.1:8030: HTTP 503 Service Unavailable"
	pub.Update(cursorstore.MemberStatus{Role: cursorstore.RoleMaster, FEURL: "http://127.0.0.1:8030", Version: "v9",
		Catalogs: map[string]cursorstore.CatalogProgress{"hive": {Cursor: 120, LastError: lastErr, LastErrorTime: time.Now().Add(-time.Minute),
			SelfHeals: 2, LastHeal: "table db.bad at event 42 (ALTER_PARTITION)", LastHealTime: time.Now().Add(-time.Minute)}}})
	if _, err := store.SetMaster(ctx, "hive", 120); err != nil {
		t.Fatal(err)
	}
	if err := store.PutMemberCursor(ctx, "fe-b", "hive", 100, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cs, err := store.Statuses(ctx)
		if err == nil && cs.Master == "fe-a" && len(cs.Members) == 2 && cs.Members[0].Live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ready: %+v %v", cs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	out, err := runCLI(t, ep, "status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"master:  fe-a", "cursors: hive=120 (epoch 0)", "MEMBER", "LAG"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	rows := tableRows(t, out, "fe-")
	// fe-a: master, FE, version, hive 120, lag 0, its last error, and the time
	// left on its live lease, which the publisher keeps renewing.
	a := rows["fe-a"]
	if a["ROLE"] != "master" || a["FE"] != "http://127.0.0.1:8030" || a["VERSION"] != "v9" || a["CATALOG"] != "hive" || a["CURSOR"] != "120" || a["LAG"] != "0" {
		t.Errorf("fe-a row %q", a)
	}
	if e := a["LAST ERROR"]; !strings.HasPrefix(e, lastErr+" (1m") || !strings.HasSuffix(e, " ago)") {
		t.Errorf("fe-a LAST ERROR %q, want %q with its age (1m…)", e, lastErr)
	}
	if h := a["HEALS"]; !strings.HasPrefix(h, "2 (last: table db.bad at event 42 (ALTER_PARTITION), 1m") || !strings.HasSuffix(h, " ago)") {
		t.Errorf("fe-a HEALS %q, want the count, the last heal and its age", h)
	}
	if left, err := time.ParseDuration(a["LEASE"]); err != nil || left <= 0 || left > leaseTTL {
		t.Errorf("fe-a LEASE %q: want the time left on a live lease, more than 0 and at most %s", a["LEASE"], leaseTTL)
	}
	// fe-b: down (no lease), its stored cursor 100, lag 120-100 = 20, no error.
	b := rows["fe-b"]
	if b["ROLE"] != "down" || b["LEASE"] != "-" || b["CATALOG"] != "hive" || b["CURSOR"] != "100" || b["LAG"] != "20" || b["HEALS"] != "-" || b["LAST ERROR"] != "-" {
		t.Errorf("fe-b row %q", b)
	}

	out, err = runCLI(t, ep, "status", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cs cursorstore.ClusterStatus
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	if cs.Master != "fe-a" || cs.MasterCursors["hive"] != 120 || len(cs.Members) != 2 || *cs.Members[1].Catalogs["hive"].Lag != 20 {
		t.Fatalf("status --json: %s", out)
	}
	if ja := cs.Members[0]; ja.Member != "fe-a" || ja.Catalogs["hive"].LastError != lastErr || ja.Catalogs["hive"].LastErrorTime.IsZero() {
		t.Errorf("status --json: fe-a's last error is not %q: %s", lastErr, out)
	}
	if ttl := cs.Members[0].LeaseTTL; ttl <= 0 || time.Duration(ttl)*time.Second > leaseTTL {
		t.Errorf("status --json: fe-a's lease_ttl_seconds %d: want more than 0 and at most %s", ttl, leaseTTL)
	}
}

// tableRows reads the member table of `hmssync status`: the rows whose first
// cell starts with prefix, keyed by member and then by column header. Cells are
// cut at the header's column offsets (tabwriter aligns every cell of a column
// under its header), so a cell with spaces ("3s ago", an error) stays whole.
func tableRows(t *testing.T, out, prefix string) map[string]map[string]string {
	t.Helper()
	columns := []string{"MEMBER", "ROLE", "LEASE", "FE", "VERSION", "UPDATED", "CATALOG", "CURSOR", "LAG", "HEALS", "LAST ERROR"}
	lines := strings.Split(out, "\n")
	var header string
	for _, l := range lines {
		if strings.HasPrefix(l, "MEMBER") {
			header = l
		}
	}
	starts := make([]int, len(columns))
	from := 0
	for i, c := range columns {
		j := strings.Index(header[from:], c)
		if j < 0 {
			t.Fatalf("status table header %q lacks column %q (after %q):\n%s", header, c, header[:from], out)
		}
		starts[i], from = from+j, from+j+len(c)
	}
	rows := map[string]map[string]string{}
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		row := map[string]string{}
		for i, c := range columns {
			end := len(l)
			if i+1 < len(columns) {
				end = min(starts[i+1], len(l))
			}
			if starts[i] < end {
				row[c] = strings.TrimSpace(l[starts[i]:end])
			}
		}
		rows[row["MEMBER"]] = row
	}
	return rows
}
