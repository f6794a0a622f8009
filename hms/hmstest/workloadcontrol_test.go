package hmstest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/testutil"
)

// POST /workload's "transactional" chooses the mix of the run; without it the
// control's default (SetTransactional, `dev hms --transactional`) applies.
func TestWorkloadControlTransactional(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := hmstest.NewServer()
	defer srv.Close()
	wl := hmstest.NewWorkloadControl(ctx, srv, 1, t.Logf)
	defer wl.Stop()
	hs := httptest.NewServer(wl.Handler(srv.ControlHandler()))
	defer hs.Close()

	run := func(body string) (hmstest.WorkloadState, map[string]int) {
		t.Helper()
		before := srv.CurrentEventID()
		resp, err := http.Post(hs.URL+"/workload", "application/json", strings.NewReader(body))
		must(t, err)
		var st hmstest.WorkloadState
		must(t, json.NewDecoder(resp.Body).Decode(&st))
		resp.Body.Close()
		testutil.Await(t, 10*time.Second, "the run to end by itself", func() (bool, string) {
			s := wl.State()
			return !s.Running, s.Error
		})
		if e := wl.State().Error; e != "" {
			t.Fatalf("run %s failed: %s", body, e)
		}
		types := map[string]int{}
		for _, e := range srv.Events()[before:] {
			types[e.Type]++
		}
		return st, types
	}
	st, types := run(`{"rate":0,"events":800,"transactional":true}`)
	if !st.Transactional || types["ALLOC_WRITE_ID_EVENT"] == 0 || types["COMMIT_TXN"] == 0 {
		t.Errorf("transactional run %+v logged %v; want transactional, with ALLOC_WRITE_ID_EVENT and COMMIT_TXN", st, types)
	}
	st, types = run(`{"rate":0,"events":800}`)
	if st.Transactional || types["ALLOC_WRITE_ID_EVENT"] != 0 {
		t.Errorf("default run %+v logged %v; want no transactional steps", st, types)
	}
	wl.SetTransactional(true)
	st, types = run(`{"rate":0,"events":800}`)
	if !st.Transactional || types["ALLOC_WRITE_ID_EVENT"] == 0 {
		t.Errorf("run after SetTransactional(true) %+v logged %v; want transactional steps", st, types)
	}
}
