package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil"
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
	columns := []string{"MEMBER", "ROLE", "LEASE", "FE", "VERSION", "UPDATED", "CATALOG", "CURSOR", "LAG", "HMS LAG", "HEALS", "METASTORE", "LAST ERROR"}
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

// status shows each catalog's metastore current event id as the master
// published it, with the cluster's lag behind it and each member's; a member
// whose metastore reads fail says so in its row; a paused cluster says since
// when and why, in the table and in --json.
func TestStatusShowsTheMetastoreAndThePause(t *testing.T) {
	srv := etcdtest.New(t)
	ep := srv.Endpoints()[0]
	store := cursorstore.New(srv.Client, "", "test", time.Second, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	runMember(t, srv.Client, "fe-a")
	publish := func(name string, st cursorstore.MemberStatus) {
		pub, err := store.NewStatusPublisher(name, 10*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { pub.Run(ctx) })
		pub.Update(st)
	}
	read := time.Now().Add(-2 * time.Second)
	current := int64(150)
	publish("fe-a", cursorstore.MemberStatus{Role: cursorstore.RoleMaster, Catalogs: map[string]cursorstore.CatalogProgress{
		"hive": {Cursor: 120, Lag: 30, MetastoreCurrent: &current, MetastoreReadAt: read}}})
	const hmsErr = "read the metastore's current event id: dial tcp 10.0.0.9:9083: connection refused"
	publish("fe-c", cursorstore.MemberStatus{Role: cursorstore.RoleFollower, Catalogs: map[string]cursorstore.CatalogProgress{
		"hive": {Cursor: 110, MetastoreError: hmsErr, MetastoreFailingSince: time.Now().Add(-40 * time.Second)}}})
	if _, err := store.SetMaster(ctx, "hive", 120); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	if err := store.SetPaused(ctx, true, "HMS upgrade, ask @alice"); err != nil {
		t.Fatal(err)
	}
	testutil.Await(t, 10*time.Second, "both statuses in etcd", func() (bool, string) {
		cs, err := store.Statuses(ctx)
		return err == nil && len(cs.Members) == 2 && cs.Members[0].Live && cs.Members[1].Live, fmt.Sprintf("%+v %v", cs.Members, err)
	})

	out, err := runCLI(t, ep, "status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "metastore: hive=150 (lag 30, read 2s ago by fe-a)") {
		t.Errorf("status lacks the metastore line of hive (150, lag 150-120, read 2s ago by fe-a):\n%s", out)
	}
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "PAUSED since ") {
			line = l
		}
	}
	since, err := time.Parse(time.RFC3339, strings.TrimSuffix(strings.Fields(strings.TrimPrefix(line, "PAUSED since "))[0], ","))
	if err != nil || since.Before(paused.Add(-time.Second).Truncate(time.Second)) || since.After(time.Now()) ||
		!strings.Contains(line, "(HMS upgrade, ask @alice)") {
		t.Errorf("pause line %q (%v): want PAUSED since the time it was set (%s) and the reason", line, err, paused.UTC().Format(time.RFC3339))
	}
	rows := tableRows(t, out, "fe-")
	if a := rows["fe-a"]; a["ROLE"] != "master" || a["HMS LAG"] != "30" || a["METASTORE"] != "ok" {
		t.Errorf("fe-a row %q: want master, HMS LAG 30, METASTORE ok", a)
	}
	c := rows["fe-c"]
	if c["ROLE"] != "follower" || c["LAG"] != "10" || c["HMS LAG"] != "40" || !strings.HasPrefix(c["METASTORE"], "failing for 40s: "+hmsErr[:40]) {
		t.Errorf("fe-c row %q: want follower, LAG 10, HMS LAG 40, METASTORE failing for 40s with the error", c)
	}

	out, err = runCLI(t, ep, "status", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cs cursorstore.ClusterStatus
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatal(err)
	}
	if v := cs.Metastore["hive"]; v.CurrentEventID != 150 || v.Lag == nil || *v.Lag != 30 || v.ReadBy != "fe-a" || !v.ReadAt.Equal(read) {
		t.Errorf("--json metastore of hive %+v: want 150, lag 30, read by fe-a at %s", v, read)
	}
	if !cs.Paused || cs.PausedSince.IsZero() || cs.PauseReason != "HMS upgrade, ask @alice" {
		t.Errorf("--json pause: %v since %s (%q)", cs.Paused, cs.PausedSince, cs.PauseReason)
	}
	if mc := cs.Members[1].Catalogs["hive"]; mc.MetastoreError != hmsErr || mc.MetastoreLag == nil || *mc.MetastoreLag != 40 {
		t.Errorf("--json fe-c: metastore_error %q, metastore_lag %v", mc.MetastoreError, mc.MetastoreLag)
	}
}

// The METASTORE cell quotes the failed read only when LAST ERROR does not
// already show it, and never for a member that is down.
func TestMetastoreCell(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	const e = "fetch up to 1000 events after 4 from the metastore: i/o timeout"
	failing := cursorstore.MemberCatalog{MetastoreError: e, MetastoreFailingSince: now.Add(-90 * time.Second)}
	withLast := failing
	withLast.LastError = e
	for _, c := range []struct {
		live bool
		mc   cursorstore.MemberCatalog
		want string
	}{
		{true, cursorstore.MemberCatalog{}, "ok"},
		{false, failing, "-"},
		{true, failing, "failing for 1m30s: " + e},
		{true, withLast, "failing for 1m30s"},
	} {
		if got := metastoreReads(cursorstore.MemberView{Live: c.live}, c.mc, now); got != c.want {
			t.Errorf("live %v, %+v: %q, want %q", c.live, c.mc, got, c.want)
		}
	}
}
