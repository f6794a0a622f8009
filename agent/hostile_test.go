package agent_test

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// An event type that is not valid UTF-8 makes the Prometheus client panic as a
// label value, which would crash the sidecar on the same event at every
// restart, and every successor too. Event types from
// the wire are labels only from a closed set, so the series stay few whatever the
// metastore sends.
func TestHostileEventTypesNeitherCrashNorGrowTheSeries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	hostile := []message.Event{{Type: "\xff", Message: "{}"}, {Type: "ALTER_TABLE\xc3", Message: "{}"}}
	for i := 0; i < 30; i++ {
		hostile = append(hostile, message.Event{Type: fmt.Sprintf("MADE_UP_%d", i), Message: "{}"})
	}
	_, last := h.hms.Append(hostile...)
	h.churn(3)
	h.awaitConverged(converge)
	if h.masterCursor() < last {
		t.Fatalf("the master cursor %d is not past the hostile events (up to %d)", h.masterCursor(), last)
	}
	for _, x := range h.running() {
		if v := x.metric("hmssync_events_received_total", `type="other"`); v < float64(len(hostile)) && x == m {
			t.Errorf("%s: hmssync_events_received_total{type=\"other\"} = %v, want at least the %d hostile events", x.name, v, len(hostile))
		}
		_, body := x.get("/metrics")
		for _, line := range strings.Split(body, "\n") {
			if strings.Contains(line, "MADE_UP") || strings.Contains(line, "\xff") {
				t.Errorf("%s: a type from the wire became a label: %s", x.name, line)
				break
			}
		}
	}
}

// A name that is not valid UTF-8 must not be turned into U+FFFD ("s\xffx" into
// "s�x"): the FE would refresh an object that does not exist, count its answer
// as success and never refresh the real one. Such an event must self-heal (a
// full refresh), with its id logged.
func TestInvalidUTF8NameSelfHeals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.startConverged()
	msg := `{"server":"thrift://hms:9083","servicePrincipal":"","db":"s` + "\xff" + `x","table":"t","tableType":"MANAGED_TABLE","tableObjJson":null,"timestamp":1}`
	_, bad := h.hms.Append(message.Event{Type: message.EventCreateTable, DB: "s\xffx", Table: "t", Message: msg, Format: message.FormatJSON})
	h.churn(3)
	h.awaitConverged(converge)
	for _, x := range h.running() {
		await(t, converge, x.name+" self-heals the event", func() (bool, string) {
			n := x.logs.FilterMessageSnippet("self-healing").FilterField(zap.Int64("event_id", bad)).Len()
			return n > 0, fmt.Sprintf("%d self-heal logs naming event %d", n, bad)
		})
		if v := x.metric("hmssync_full_refreshes_total", `reason="self_heal"`); v < 1 {
			t.Errorf("%s: no self_heal full refresh counted", x.name)
		}
	}
}

// A metastore's exception message is the metastore's to choose, megabytes
// included; the last error a member keeps for /status and publishes in etcd
// (whose values are capped) stays short.
func TestHugeMetastoreErrorIsShortInStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	h.hms.InjectFault("get_next_notification", hmstest.Fault{Err: "boom " + strings.Repeat("x", 1<<20)})
	h.churn(1)
	await(t, converge, "the master records the metastore's error", func() (bool, string) {
		e := m.catalogStatus().LastError
		return strings.Contains(e, "boom"), fmt.Sprintf("last error %.100q", e)
	})
	if e := m.catalogStatus().LastError; len(e) > 2100 {
		t.Errorf("the last error in /status is %d bytes; want at most about 2 KiB", len(e))
	}
	h.hms.ClearFaults()
	h.awaitConverged(converge)
}
