package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/internal/testutil"
)

// `dev fe` serves the light state view and the cache drop that process-level
// tests use: an FE made to forget its catalog reports applied_event_id -1, as
// one restarted empty would.
func TestDevFESummaryAndCacheDrop(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addr := freeAddr(t)
	base := "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"hmssync", "dev", "fe", "--listen", addr, "--log-level", "error"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev fe: %v", err)
		}
	}()
	testutil.Await(t, 10*time.Second, "dev fe to announce itself", func() (bool, string) {
		return strings.Contains(out.String(), "fake FE 0: "), out.String()
	})

	req, _ := http.NewRequest(http.MethodPost, base+"/api/hmssync/v1/catalogs/hive/changes",
		strings.NewReader(`{"from_event_id":-1,"to_event_id":12,"full_refresh":true,"changes":[]}`))
	req.SetBasicAuth("root", "")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("native full refresh: %s", resp.Status)
	}
	var sum fetest.Summary
	controlCall(t, http.MethodGet, base+"/_fetest/summary", "", &sum)
	if sum.Catalogs["hive"].AppliedEventID != 12 || sum.Changes != 1 || sum.FullRefreshes != 1 {
		t.Fatalf("summary %+v; want hive applied at 12, one batch, a full refresh", sum)
	}
	controlCall(t, http.MethodPost, base+"/_fetest/drop-cache?catalog=hive", "", &sum)
	var st struct {
		Applied int64 `json:"applied_event_id"`
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/api/hmssync/v1/catalogs/hive/state", nil)
	req.SetBasicAuth("root", "")
	resp, err = http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	must(t, jsonDecode(resp, &st))
	if st.Applied != -1 {
		t.Errorf("native state after the cache drop: applied %d, want -1", st.Applied)
	}
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
