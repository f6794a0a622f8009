package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// /livez measures progress per external call: a Doris master draining a
// backlog whose REFRESH statements each take a while, one step far longer than
// StuckAfter in all, is never reported stuck, because every statement it
// completes is progress. (StuckAfter is injected small: 600 ms against
// 250 ms per statement.)
func TestLongDrainIsNotStuck(t *testing.T) {
	// Not parallel: every 250 ms statement must end within StuckAfter
	// (600 ms) of the one before; tests running beside it on a small machine
	// would eat into that slack.
	const perStatement, stuckAfter = 250 * time.Millisecond, 600 * time.Millisecond
	h := newHarness(t, harnessOpts{dialect: "doris"})
	h.churn(5)
	m := h.start(0, memberOpts{stuckAfter: stuckAfter})
	h.awaitConverged(converge)

	// The backlog builds up while the master holds for the pause key, so that
	// one step drains all of it.
	h.pauseMaster(m)
	// One REFRESH TABLE per table (and one REFRESH DATABASE): 10 statements.
	if err := h.hms.CreateDatabase("drain"); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		if err := h.hms.CreateTable(hmstest.Table{DB: "drain", Name: fmt.Sprintf("t%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	before := len(refreshStatements(m.fe.Statements()))
	m.fe.InjectFault(fetest.Fault{SQL: true, Match: "REFRESH", Delay: perStatement})
	h.setPause(false)

	start := time.Now()
	for {
		code, body := m.get("/livez")
		if code != http.StatusOK {
			t.Fatalf("/livez %d after %s of draining: %s", code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(body))
		}
		if ok, _ := h.converged(); ok {
			break
		}
		if time.Since(start) > converge {
			_, why := h.converged()
			t.Fatalf("no convergence after %s: %s", converge, why)
		}
		time.Sleep(5 * time.Millisecond) // the polling period of the probe, not a synchronisation
	}
	m.fe.ClearFaults()
	n := len(refreshStatements(m.fe.Statements())) - before
	if drain := time.Duration(n) * perStatement; drain < 3*stuckAfter {
		t.Fatalf("the drain sent %d statements (%s): not long enough against StuckAfter %s to say anything", n, drain, stuckAfter)
	}
	t.Logf("drained with %d REFRESH statements in %s", n, time.Since(start).Round(time.Millisecond))
}

// The other side: one call that outlives StuckAfter is reported on /livez, and
// the report clears once the call completes.
func TestOneHangingCallIsStuck(t *testing.T) {
	t.Parallel()
	const stuckAfter = 300 * time.Millisecond
	h := newHarness(t, harnessOpts{})
	h.churn(5)
	m := h.start(0, memberOpts{stuckAfter: stuckAfter})
	h.awaitConverged(converge, 0)
	hold := make(chan struct{})
	m.fe.InjectFault(fetest.Fault{Native: true, Match: "/changes", Hold: hold, Times: 1})
	h.churn(3)
	await(t, 10*time.Second, "/livez reporting the held batch", func() (bool, string) {
		code, body := m.get("/livez")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "catalog hive"), fmt.Sprintf("%d %s", code, body)
	})
	close(hold)
	await(t, 10*time.Second, "/livez ok once the batch was answered", func() (bool, string) {
		code, body := m.get("/livez")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	h.awaitConverged(converge, 0)
}
