package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier/fetest"
)

// hmssync_status_publishes_total counts the writes of the member's status key
// that `hmssync status` reads: it moves as the key is written.
func TestStatusPublishesAreCounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.start(0, memberOpts{publishStatus: true})
	key := etcdPrefix + "/" + testCluster + "/members/" + m.name + "/status"
	await(t, 10*time.Second, "status key written and counted", func() (bool, string) {
		resp, err := h.etcd.Client.Get(context.Background(), key)
		if err != nil {
			return false, err.Error()
		}
		n := m.metric("hmssync_status_publishes_total", `result="ok"`)
		return len(resp.Kvs) == 1 && n >= 1, fmt.Sprintf("%d keys, status_publishes_total{result=ok} = %v", len(resp.Kvs), n)
	})
}

// Every class a retry is counted under is named in the help text.
func TestRetriesHelpNamesEveryClass(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	// One failed full refresh makes the series (and its help) exist.
	h.fes[0].InjectFault(fetest.Fault{Native: true, Match: "/changes", HTTPStatus: 503, Times: 1})
	m := h.start(0, memberOpts{})
	var help string
	await(t, 10*time.Second, "a retry counted", func() (bool, string) {
		_, body := m.get("/metrics")
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "# HELP hmssync_retries_total ") {
				help = line
			}
		}
		return help != "", "no HELP line for hmssync_retries_total"
	})
	for _, class := range []string{"transient", "deterministic", "auth", "configuration"} {
		if !strings.Contains(help, class) {
			t.Errorf("retries_total's help does not name %q: %s", class, help)
		}
	}
}
