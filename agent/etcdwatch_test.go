package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/internal/testutil/etcdpartition"
)

// SPEC §7: /readyz requires the etcd watch to be fresh. A member whose link to
// etcd is cut (its gRPC streams stay open and silent, as in a network partition)
// turns not ready naming the master cursor's watch, counts the watch restart in
// hmssync_watch_restarts_total, and is ready again by itself once the link heals.
func TestReadyzFollowsTheEtcdWatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.churn(5)
	h.start(0, memberOpts{})
	h.master(10 * time.Second)
	link := etcdpartition.New(t, h.etcd.Endpoints()[0])
	cut := h.start(1, memberOpts{link: link})
	h.awaitConverged(converge, 0, 1)
	ready := func(m *member) func() (bool, string) {
		return func() (bool, string) {
			code, body := m.get("/readyz")
			return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
		}
	}
	await(t, 10*time.Second, cut.name+" ready", ready(cut))
	restarts := cut.metric("hmssync_watch_restarts_total")

	link.Cut()
	await(t, 15*time.Second, cut.name+"'s /readyz failing on its etcd watch of "+cursorKey, func() (bool, string) {
		code, body := cut.get("/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "etcd watch of "+cursorKey), fmt.Sprintf("%d %s", code, body)
	})
	_, body := cut.get("/readyz")
	t.Logf("%s cut off from etcd: /readyz says %s", cut.name, body)
	if ok, why := ready(h.running()[0])(); !ok {
		t.Errorf("the member still connected to etcd is not ready: %s", why)
	}
	// The silent watch is given up and re-established (it keeps trying while
	// cut off): that is a watch restart.
	await(t, 15*time.Second, cut.name+"'s hmssync_watch_restarts_total counting the restart", func() (bool, string) {
		got := cut.metric("hmssync_watch_restarts_total")
		return got > restarts, fmt.Sprintf("%v, was %v before the cut", got, restarts)
	})

	link.Heal()
	await(t, 20*time.Second, cut.name+" ready again after the link healed", ready(cut))
	// The re-established watch delivers: the follower catches up with new events.
	h.churn(5)
	h.awaitConverged(converge, 0, 1)
}
