package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/testutil"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// `run` warns at start of each catalog whose FE still has Doris's own event
// sync on (the finding check fails on), naming the statement that turns it
// off, and of no other catalog; /status shows it on that catalog.
func TestRunWarnsOfDorisOwnSync(t *testing.T) {
	hms := hmstest.NewServer()
	defer hms.Close()
	fe := fetest.NewServer(fetest.Options{Catalogs: []fetest.Catalog{
		{Name: "hive", Properties: map[string]string{"type": "hms", "hive.enable_hms_events_incremental_sync": "true"}},
		{Name: "quiet", Properties: map[string]string{"type": "hms", "hive.enable_hms_events_incremental_sync": "false"}},
	}})
	defer fe.Close()
	etcd := etcdtest.New(t)
	f := filepath.Join(t.TempDir(), "sidecar.yaml")
	listen := freeAddr(t)
	must(t, os.WriteFile(f, []byte(fmt.Sprintf(`
cluster: double
member: fe-0
etcd: {endpoints: [%q], lease_ttl: 3s, request_timeout: 900ms}
fe: {url: %q, dialect: doris, health_interval: 100ms}
catalogs:
  - {name: hive, hms_uris: [%q], poll_interval: 50ms}
  - {name: quiet, hms_uris: [%q], poll_interval: 50ms}
http: {listen: %q}
`, etcd.Endpoints()[0], fe.URL, hms.URI(), hms.URI(), listen)), 0o600))
	logs, stop := startSidecar(t, f)
	defer stop()
	const msg = "Doris's own event sync is on for this catalog"
	testutil.Await(t, 10*time.Second, "the warning", func() (bool, string) {
		return logs.FilterMessageSnippet(msg).Len() > 0, ""
	})
	warned := logs.FilterMessageSnippet(msg).All()
	if len(warned) != 1 || warned[0].ContextMap()["catalog"] != "hive" ||
		warned[0].ContextMap()["fix"] != `ALTER CATALOG `+"`hive`"+` SET PROPERTIES ("hive.enable_hms_events_incremental_sync" = "false")` {
		t.Fatalf("warnings %v; want one, for catalog hive, with the ALTER CATALOG that fixes it", warned)
	}
	var st agent.Status
	testutil.Await(t, 10*time.Second, "/status showing the double sync", func() (bool, string) {
		resp, err := http.Get("http://" + listen + "/status")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		st = agent.Status{}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return false, err.Error()
		}
		return len(st.Catalogs) == 2, fmt.Sprint(st.Catalogs)
	})
	for _, c := range st.Catalogs {
		if on := strings.Contains(c.Warning, "Doris's own event sync is on") && strings.Contains(c.Warning, "ALTER CATALOG `hive`"); on != (c.Name == "hive") {
			t.Errorf("/status catalog %s warning %q; want the double sync shown on hive only", c.Name, c.Warning)
		}
	}
	stop()
	if n := logs.FilterMessageSnippet(msg).Len(); n != 1 {
		t.Fatalf("%d warnings after the sidecar stopped; want the one for hive", n)
	}
}
