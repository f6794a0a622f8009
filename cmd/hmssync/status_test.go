package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/embedetcd/etcdtest"
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
	pub, err := store.NewStatusPublisher("fe-a", 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() { pub.Run(ctx); done <- struct{}{} }()
	pub.Update(cursorstore.MemberStatus{Role: cursorstore.RoleMaster, FEURL: "http://127.0.0.1:8030", Version: "v9",
		Catalogs: map[string]cursorstore.CatalogStatus{"hive": {Cursor: 120}}})
	if _, err := store.SetMaster(ctx, "hive", 120); err != nil {
		t.Fatal(err)
	}
	if err := store.PutMemberCursor(ctx, "fe-b", "hive", 100); err != nil {
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
	for _, want := range []string{"master:  fe-a", "cursors: hive=120", "MEMBER", "LAG"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "fe-") {
			rows[f[0]] = f
		}
	}
	// fe-a: master, lease, FE, version, updated "Ns ago", hive 120, lag 0.
	if a := rows["fe-a"]; len(a) < 10 || a[1] != "master" || a[3] != "http://127.0.0.1:8030" || a[4] != "v9" || a[7] != "hive" || a[8] != "120" || a[9] != "0" {
		t.Errorf("fe-a row %q", a)
	}
	// fe-b: down, its stored cursor 100, lag 120-100 = 20.
	if b := rows["fe-b"]; len(b) < 10 || b[1] != "down" || b[6] != "hive" || b[7] != "100" || b[8] != "20" {
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
}
