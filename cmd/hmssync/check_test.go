package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// TestCheckExitsZeroOnlyWhenEveryCheckPasses runs `hmssync check --config FILE
// --json` against a real etcd, the fake metastore and the fake FE, then again
// with a password the FE refuses.
func TestCheckExitsZeroOnlyWhenEveryCheckPasses(t *testing.T) {
	etcd := etcdtest.New(t)
	meta := hmstest.NewServer()
	t.Cleanup(meta.Close)
	if err := meta.CreateDatabase("sales"); err != nil {
		t.Fatal(err)
	}
	fe := fetest.NewServer(fetest.Options{Password: "pw", Catalogs: []fetest.Catalog{{Name: "hive"}}})
	t.Cleanup(fe.Close)
	run := func(password string) (report struct {
		OK     bool `json:"ok"`
		Checks []struct {
			Check string `json:"check"`
			OK    bool   `json:"ok"`
			Fix   string `json:"fix"`
		} `json:"checks"`
	}, err error) {
		pw := writeFile(t, password)
		cfg := writeFile(t, fmt.Sprintf(`
cluster: prod
member: fe-0
etcd: {endpoints: [%s], request_timeout: 2s, dial_timeout: 2s}
fe: {url: %s, dialect: doris, password_file: %s, timeout: 2s}
catalogs: [{name: hive, hms_uris: [%s], hms_timeout: 2s}]
`, etcd.Endpoints()[0], fe.URL, pw, meta.URI()))
		app := newApp()
		var out bytes.Buffer
		app.Writer, app.ErrWriter = &out, &out
		err = app.Run([]string{"hmssync", "check", "--config", cfg, "--json"})
		if jerr := json.Unmarshal(out.Bytes(), &report); jerr != nil {
			t.Fatalf("--json printed %q: %v", out.String(), jerr)
		}
		return report, err
	}

	good, err := run("pw")
	if err != nil || !good.OK {
		t.Fatalf("healthy topology: err %v, report %+v", err, good)
	}
	if len(good.Checks) < 8 {
		t.Errorf("want etcd, metastore and FE checks, got %d: %+v", len(good.Checks), good.Checks)
	}

	bad, err := run("wrong")
	var ec cli.ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != 1 {
		t.Fatalf("refused password: want exit status 1, got %v", err)
	}
	if bad.OK {
		t.Fatal("refused password: report says ok")
	}
	failed := 0
	for _, c := range bad.Checks {
		if !c.OK {
			failed++
			if c.Fix == "" {
				t.Errorf("%s failed without a fix", c.Check)
			}
		}
	}
	if failed != 1 {
		t.Errorf("want exactly the FE check to fail, %d failed: %+v", failed, bad.Checks)
	}

	// A metastore that logs no INSERT events fails check, with the setting
	// named in the JSON.
	meta.SetSetting("hive.metastore.dml.events", "false")
	noDML, err := run("pw")
	if !errors.As(err, &ec) || ec.ExitCode() != 1 || noDML.OK {
		t.Fatalf("hive.metastore.dml.events=false: want exit status 1 and ok false, got %v, %+v", err, noDML)
	}
	var failedChecks []string
	for _, c := range noDML.Checks {
		if !c.OK {
			failedChecks = append(failedChecks, c.Check+" | "+c.Fix)
		}
	}
	if len(failedChecks) != 1 || !strings.Contains(failedChecks[0], "catalog hive: setting hive.metastore.dml.events | set hive.metastore.dml.events=true") {
		t.Errorf("hive.metastore.dml.events=false: failed %q; want that setting's check with its fix", failedChecks)
	}
}
