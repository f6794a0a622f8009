package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/testutil"
)

// devHMS runs `dev hms` with args in the background until the returned stop,
// its control API on the returned address. The addresses are picked free and
// then bound by dev hms, so another test can take one in between: a start that
// fails to bind is tried again on new ones.
func devHMS(t *testing.T, args ...string) (stop func(), control string) {
	t.Helper()
	for try := 1; ; try++ {
		control = freeAddr(t)
		stop, err := startDevHMS(t, control, args...)
		if err == nil {
			return stop, control
		}
		if !strings.Contains(err.Error(), "address already in use") || try == 5 {
			t.Fatalf("dev hms ended: %v", err)
		}
	}
}

// startDevHMS starts `dev hms` with its control API on control; err is why it
// ended before announcing itself.
func startDevHMS(t *testing.T, control string, args ...string) (stop func(), err error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var errOut syncBuffer
	app := newApp()
	app.ErrWriter = &errOut
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, append([]string{"hmssync", "dev", "hms", "--listen", freeAddr(t), "--control", control}, args...))
	}()
	var ended error
	testutil.Await(t, 10*time.Second, "dev hms to announce itself", func() (bool, string) {
		select {
		case err := <-done:
			ended = fmt.Errorf("%w\n%s", err, errOut.String())
			return true, ""
		default:
		}
		return strings.Contains(errOut.String(), "fake metastore on"), errOut.String()
	})
	if ended != nil {
		cancel()
		return nil, ended
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev hms: %v\n%s", err, errOut.String())
		}
	}, nil
}

func controlCall(t *testing.T, method, url, body string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must(t, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s %s", method, url, resp.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, raw)
		}
	}
}

type devHMSState struct {
	Current int64 `json:"current_event_id"`
	Oldest  int64 `json:"oldest_event_id"`
	Events  int   `json:"events"`
}

// The workload of `dev hms` starts, stops and stops by itself after a limit
// through the control API; with --state a restart continues the same log
// (same ids and objects, no reset) and a new workload takes a seed of its own.
func TestDevHMSWorkloadControlAndState(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	stop, control := devHMS(t, "--state", dir)
	base := "http://" + control

	var wl hmstest.WorkloadState
	controlCall(t, http.MethodPost, base+"/workload", `{"rate":0,"events":30}`, &wl)
	if !wl.Running || wl.Limit != 30 || wl.Seed != 1 || wl.StartedAfter != 0 {
		t.Errorf("POST /workload answered %+v; want running, limit 30, seed 1, started after 0", wl)
	}
	testutil.Await(t, 10*time.Second, "the limited workload to end by itself", func() (bool, string) {
		controlCall(t, http.MethodGet, base+"/workload", "", &wl)
		return !wl.Running, fmt.Sprintf("%+v", wl)
	})
	var st devHMSState
	controlCall(t, http.MethodGet, base+"/state", "", &st)
	if st.Current != 30 || wl.Error != "" {
		t.Fatalf("after a workload limited to 30 events: current id %d, error %q", st.Current, wl.Error)
	}

	// Started without a limit, then stopped: nothing is appended after the stop.
	controlCall(t, http.MethodPost, base+"/workload", `{"rate":500}`, &wl)
	if wl.Seed != 2 || wl.StartedAfter != 30 {
		t.Errorf("second run %+v; want seed 2, started after 30", wl)
	}
	testutil.Await(t, 10*time.Second, "the second run appending", func() (bool, string) {
		controlCall(t, http.MethodGet, base+"/state", "", &st)
		return st.Current > 40, fmt.Sprintf("current %d", st.Current)
	})
	controlCall(t, http.MethodDelete, base+"/workload", "", &wl)
	if wl.Running {
		t.Fatalf("DELETE /workload answered %+v; want stopped", wl)
	}
	controlCall(t, http.MethodGet, base+"/state", "", &st)
	var added struct{ First int64 }
	controlCall(t, http.MethodPost, base+"/events", `{"eventType":"OPEN_TXN","message":"{}","messageFormat":"json-0.2"}`+"\n", &added)
	if added.First != st.Current+1 {
		t.Fatalf("an event posted after the stop got id %d, want %d: the workload went on", added.First, st.Current+1)
	}
	controlCall(t, http.MethodPost, base+"/clean?before=5", "", nil)
	var before devHMSState
	controlCall(t, http.MethodGet, base+"/state", "", &before)
	var snapBefore map[string]map[string][]string
	controlCall(t, http.MethodGet, base+"/snapshot", "", &snapBefore)
	stop()

	// Restarted on the same state: the same log and objects.
	stop, control = devHMS(t, "--state", dir)
	defer stop()
	base = "http://" + control
	controlCall(t, http.MethodGet, base+"/state", "", &st)
	if st != before {
		t.Fatalf("after a restart with --state: %+v, want %+v", st, before)
	}
	var snap map[string]map[string][]string
	controlCall(t, http.MethodGet, base+"/snapshot", "", &snap)
	if fmt.Sprint(snap) != fmt.Sprint(snapBefore) {
		t.Fatalf("objects after the restart differ:\n%v\nwant\n%v", snap, snapBefore)
	}
	controlCall(t, http.MethodPost, base+"/workload", `{"rate":0,"events":5}`, &wl)
	if wl.Seed != 3 {
		t.Errorf("a run after the restart took seed %d, want 3 (1 and 2 own databases already)", wl.Seed)
	}
	testutil.Await(t, 10*time.Second, "the run after the restart to end", func() (bool, string) {
		controlCall(t, http.MethodGet, base+"/workload", "", &wl)
		return !wl.Running, fmt.Sprintf("%+v", wl)
	})
	controlCall(t, http.MethodGet, base+"/state", "", &st)
	if wl.Error != "" || st.Current != before.Current+5 {
		t.Errorf("after the restart a 5-event run ends at %d (error %q), want %d", st.Current, wl.Error, before.Current+5)
	}

	var bad map[string]string
	req, _ := http.NewRequest(http.MethodPost, base+"/workload", strings.NewReader(`{"rate":-1}`))
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	_ = json.NewDecoder(resp.Body).Decode(&bad)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(bad["error"], "rate") {
		t.Errorf("POST /workload with rate -1: %s %v; want 400 naming the rate", resp.Status, bad)
	}
}
