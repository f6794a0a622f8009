package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/applier/fetest"
)

// GET /v1/wait end to end: embedded etcd, the fake metastore, fake FEs, three
// sidecars publishing their status keys (what makes a member live for cluster
// scope), both dialects.

// wait calls the member's /v1/wait with query.
func (m *member) wait(t *testing.T, query string) (int, agent.WaitResult) {
	t.Helper()
	resp, err := http.Get(m.http.URL + "/v1/wait?" + query)
	if err != nil {
		t.Fatalf("GET /v1/wait?%s on %s: %v", query, m.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r agent.WaitResult
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("GET /v1/wait?%s on %s: HTTP %d, not JSON: %q", query, m.name, resp.StatusCode, body)
	}
	return resp.StatusCode, r
}

func target(r agent.WaitResult) int64 {
	if r.Target == nil {
		return -99
	}
	return *r.Target
}

// startPublishing starts the three sidecars with their status keys and waits
// until every FE converged; it returns the master.
func (h *harness) startPublishing() *member {
	h.t.Helper()
	h.churn(5)
	for i := 0; i < 3; i++ {
		h.start(i, memberOpts{publishStatus: true})
	}
	h.awaitConverged(converge)
	return h.master(5 * time.Second)
}

// feHolds says whether FE i holds the metastore's changes up to id: with the
// native dialect its own applied id, with doris the cluster's state (one
// catalog replicated to every FE) equal to the metastore's.
func (h *harness) feHolds(i int, id int64) (bool, string) {
	if h.o.dialect == "doris" {
		if d := fetest.Diff(h.hms.Snapshot(), h.feCluster.Snapshot(testCatalog)); d != "" {
			return false, "the Doris cluster differs from the metastore: " + d
		}
		return true, ""
	}
	if got := h.fes[i].AppliedEventID(testCatalog); got < id {
		return false, fmt.Sprintf("FE %d applied up to %d, below %d", i, got, id)
	}
	return true, ""
}

func TestWaitE2E(t *testing.T) {
	for _, dialect := range []string{"native", "doris"} {
		t.Run(dialect, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: dialect})
			master := h.startPublishing()
			var follower *member
			for _, m := range h.running() {
				if m != master {
					follower = m
					break
				}
			}

			// A change, then a wait on a follower: member scope.
			h.churn(5)
			cur := h.hms.CurrentEventID()
			code, r := follower.wait(t, "catalog=hive&timeout=20s")
			if code != http.StatusOK || target(r) != cur {
				t.Fatalf("member-scope wait on %s after the change up to %d: HTTP %d %+v, want 200 at %d", follower.name, cur, code, r, cur)
			}
			if ok, why := h.feHolds(follower.i, cur); !ok {
				t.Fatalf("member-scope wait on %s answered caught up, but %s", follower.name, why)
			}

			// Cluster scope: every live member's FE holds it.
			h.churn(5)
			cur = h.hms.CurrentEventID()
			code, r = master.wait(t, "catalog=hive&scope=cluster&timeout=20s")
			if code != http.StatusOK || target(r) != cur || r.Scope != "cluster" {
				t.Fatalf("cluster-scope wait after the change up to %d: HTTP %d %+v, want 200 at %d", cur, code, r, cur)
			}
			for i := range h.fes {
				if ok, why := h.feHolds(i, cur); !ok {
					t.Fatalf("cluster-scope wait answered caught up, but %s", why)
				}
			}

			// A paused master: the wait times out in about its timeout and
			// says why.
			h.pauseMaster(master)
			h.churn(3)
			start := time.Now()
			code, r = follower.wait(t, "catalog=hive&timeout=2s")
			took := time.Since(start)
			if code != http.StatusGatewayTimeout || took > 3*time.Second || !strings.Contains(r.Reason, "paused") {
				t.Fatalf("wait with the master paused: HTTP %d after %s, reason %q; want 504 within 3s naming the pause", code, took, r.Reason)
			}
			h.setPause(false)
			code, r = follower.wait(t, "catalog=hive&timeout=20s")
			if code != http.StatusOK {
				t.Fatalf("wait after the pause key was removed: HTTP %d %+v, want 200", code, r)
			}
		})
	}
}

// A follower whose FE refuses every batch is held behind: cluster scope waits
// for it (and names it), member scope on the master does not.
func TestWaitClusterScopeWaitsForAFollowerHeldBehind(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	master := h.startPublishing()
	var held *member
	for _, m := range h.running() {
		if m != master {
			held = m
			break
		}
	}
	at := held.catalogStatus().Cursor
	held.fe.InjectFault(fetest.Fault{Native: true, Match: "/changes", HTTPStatus: http.StatusServiceUnavailable})
	h.churn(5)
	cur := h.hms.CurrentEventID()

	code, r := master.wait(t, "catalog=hive&timeout=20s")
	if code != http.StatusOK || target(r) != cur {
		t.Fatalf("member-scope wait on the master: HTTP %d %+v, want 200 at %d", code, r, cur)
	}
	code, r = master.wait(t, "catalog=hive&scope=cluster&timeout=2s")
	want := fmt.Sprintf("member %s at %d", held.name, at)
	if code != http.StatusGatewayTimeout || !strings.Contains(r.Reason, want) {
		t.Fatalf("cluster-scope wait with %s held at %d: HTTP %d reason %q, want 504 saying %q", held.name, at, code, r.Reason, want)
	}
	if ok, _ := h.feHolds(held.i, cur); ok {
		t.Fatalf("FE %d holds %d although its faults refuse every batch: the test holds nothing back", held.i, cur)
	}

	// Released, the follower catches up and the cluster-scope wait returns.
	done := make(chan struct{})
	var code2 int
	var r2 agent.WaitResult
	go func() {
		defer close(done)
		code2, r2 = master.wait(t, "catalog=hive&scope=cluster&timeout=20s")
	}()
	held.fe.ClearFaults()
	<-done
	if code2 != http.StatusOK || target(r2) != cur {
		t.Fatalf("cluster-scope wait once the follower was released: HTTP %d %+v, want 200 at %d", code2, r2, cur)
	}
	if ok, why := h.feHolds(held.i, cur); !ok {
		t.Fatalf("cluster-scope wait answered caught up, but %s", why)
	}
	// A stopped member is no longer live: cluster scope does not wait for it.
	held.fe.InjectFault(fetest.Fault{Native: true, Match: "/changes", HTTPStatus: http.StatusServiceUnavailable})
	held.stop()
	h.churn(2)
	if code, r := master.wait(t, "catalog=hive&scope=cluster&timeout=20s"); code != http.StatusOK {
		t.Fatalf("cluster-scope wait with the held member stopped (its status key gone): HTTP %d %+v, want 200", code, r)
	}
	// Caught up, timeout=0 looks once: the other members' cursors are read
	// first (this request opens their watch), then the answer is 200, not 504.
	if code, r := master.wait(t, "catalog=hive&scope=cluster&timeout=0s"); code != http.StatusOK {
		t.Fatalf("cluster-scope wait with timeout=0s, every live member caught up: HTTP %d %+v, want 200", code, r)
	}
}
