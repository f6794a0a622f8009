package preflight_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/internal/preflight"
)

// settingsOf runs the event-settings findings against a fake metastore whose
// settings change sets up, over the real wire.
func settingsOf(t *testing.T, change func(s *hmstest.Server)) []preflight.Result {
	t.Helper()
	s := hmstest.NewServer()
	t.Cleanup(s.Close)
	if change != nil {
		change(s)
	}
	cat := preflight.Catalog{Name: "hive", URIs: []string{s.URI()}, UGIUser: "sync", Timeout: 2 * time.Second}
	cl, err := hms.NewClient(hms.ClientConfig{URIs: cat.URIs, CallTimeout: 2 * time.Second, UGIUser: cat.UGIUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return preflight.EventSettings(ctx, cl, cat)
}

// wantFinding checks the one finding about setting: passed (ok), failed, or
// unverified, with detail (and, when failed, fix) containing the texts given.
func wantFinding(t *testing.T, rs []preflight.Result, setting, state string, texts ...string) {
	t.Helper()
	r := find(t, rs, "setting "+setting)
	got := "ok"
	switch {
	case !r.OK:
		got = "failed"
	case r.Unverified:
		got = "unverified"
	}
	if got != state {
		t.Fatalf("%s: %s, want %s:\n%s", setting, got, state, text(rs))
	}
	for _, s := range texts {
		if !strings.Contains(r.Detail+" | fix: "+r.Fix, s) {
			t.Fatalf("%s: %q (fix %q) does not say %q", setting, r.Detail, r.Fix, s)
		}
	}
	if (r.Fix != "") != (state == "failed") {
		t.Fatalf("%s: fix %q on a %s finding", setting, r.Fix, state)
	}
}

// A metastore set up as hmssync needs passes every finding, and each is there.
func TestEventSettingsRight(t *testing.T) {
	rs := settingsOf(t, nil)
	if len(rs) != 7 {
		t.Fatalf("want 7 findings, got %d:\n%s", len(rs), text(rs))
	}
	for _, r := range rs {
		if !r.OK || r.Unverified {
			t.Fatalf("a right metastore: %+v\n%s", r, text(rs))
		}
	}
	wantFinding(t, rs, "hive.metastore.(transactional.)event.listeners", "ok", "DbNotificationListener is transactional")
	wantFinding(t, rs, "hive.metastore.event.db.listener.timetolive", "ok", "86400 s")
	wantFinding(t, rs, "hive.txn.timeout", "ok", "300 s")
}

func TestEventSettingsListener(t *testing.T) {
	const setting = "hive.metastore.(transactional.)event.listeners"
	rs := settingsOf(t, func(s *hmstest.Server) {
		s.SetSetting("hive.metastore.transactional.event.listeners", "")
		s.SetSetting("hive.metastore.event.listeners", "")
	})
	wantFinding(t, rs, setting, "failed", "no listener writes the notification log",
		"hive.metastore.transactional.event.listeners=org.apache.hive.hcatalog.listener.DbNotificationListener")

	rs = settingsOf(t, func(s *hmstest.Server) {
		s.SetSetting("hive.metastore.transactional.event.listeners", "")
		s.SetSetting("hive.metastore.event.listeners", "com.example.Audit, org.apache.hive.hcatalog.listener.DbNotificationListener")
	})
	wantFinding(t, rs, setting, "ok", "after the metastore's own commit")

	rs = settingsOf(t, func(s *hmstest.Server) {
		s.SetSetting("hive.metastore.transactional.event.listeners", "com.example.MyNotificationLogWriter")
	})
	wantFinding(t, rs, setting, "unverified", "no DbNotificationListener", "com.example.MyNotificationLogWriter")

	rs = settingsOf(t, func(s *hmstest.Server) { s.RefuseSetting("hive.metastore.transactional.event.listeners") })
	wantFinding(t, rs, setting, "unverified", "refuses to reveal it", "cannot be accessed")
}

func TestEventSettingsDMLEvents(t *testing.T) {
	rs := settingsOf(t, func(s *hmstest.Server) { s.SetSetting("hive.metastore.dml.events", "false") })
	wantFinding(t, rs, "hive.metastore.dml.events", "failed", `"false"`, "hive.metastore.dml.events=true", "no INSERT event")
	rs = settingsOf(t, func(s *hmstest.Server) { s.SetSetting("hive.metastore.dml.events", " TRUE ") })
	wantFinding(t, rs, "hive.metastore.dml.events", "ok")
	rs = settingsOf(t, func(s *hmstest.Server) { s.RefuseSetting("hive.metastore.dml.events") })
	wantFinding(t, rs, "hive.metastore.dml.events", "unverified", "refuses to reveal it")
}

func TestEventSettingsListenerTTL(t *testing.T) {
	const setting = "hive.metastore.event.db.listener.timetolive"
	for _, tc := range []struct{ value, state, text string }{
		{"600s", "failed", "600 s"},
		{"59m", "failed", "3540 s"},
		{"3600", "ok", "3600 s"}, // seconds: the setting's unit
		{"2d", "ok", "172800 s (2 days)"},
		{"forever", "failed", "forever"},
	} {
		rs := settingsOf(t, func(s *hmstest.Server) { s.SetSetting(setting, tc.value) })
		texts := []string{tc.text}
		if tc.state == "failed" {
			texts = append(texts, "at least 3600 s", "full refresh")
		}
		wantFinding(t, rs, setting, tc.state, texts...)
	}
	rs := settingsOf(t, func(s *hmstest.Server) { s.UnsetSetting(setting) })
	wantFinding(t, rs, setting, "unverified", "not known to this metastore")
}

func TestEventSettingsThriftObjects(t *testing.T) {
	const setting = "hive.metastore.notifications.add.thrift.objects"
	rs := settingsOf(t, func(s *hmstest.Server) { s.SetSetting(setting, "false") })
	wantFinding(t, rs, setting, "failed", "no table and partition objects", setting+"=true")
	rs = settingsOf(t, func(s *hmstest.Server) { s.SetSetting(setting, "true") })
	wantFinding(t, rs, setting, "ok", "true")
}

func TestEventSettingsAlterBasic(t *testing.T) {
	const setting = "hive.metastore.alter.notifications.basic"
	rs := settingsOf(t, func(s *hmstest.Server) { s.SetSetting(setting, "true") })
	wantFinding(t, rs, setting, "failed", "only alters that change a name", setting+"=false")
	rs = settingsOf(t, func(s *hmstest.Server) { s.SetSetting(setting, "false") })
	wantFinding(t, rs, setting, "ok", "false")
}

// With the notification API's authorization on, the finding depends on
// whether the metastore lets this sidecar's user read the log.
func TestEventSettingsAPIAuth(t *testing.T) {
	const setting = "hive.metastore.event.db.notification.api.auth"
	rs := settingsOf(t, func(s *hmstest.Server) { s.SetSetting(setting, "true") })
	wantFinding(t, rs, setting, "ok", "only proxy users", "sync (hms_user)")
	rs = settingsOf(t, func(s *hmstest.Server) {
		s.SetSetting(setting, "true")
		s.InjectFault("get_next_notification", hmstest.Fault{Err: "User sync is not allowed to perform this API call"})
	})
	wantFinding(t, rs, setting, "failed", "not allowed to perform this API call", setting+"=false", "sync (hms_user) a proxy user")
}

func TestEventSettingsTxnTimeout(t *testing.T) {
	rs := settingsOf(t, func(s *hmstest.Server) { s.SetSetting("hive.txn.timeout", "7200s") })
	wantFinding(t, rs, "hive.txn.timeout", "ok", "7200 s (2 h)")
	rs = settingsOf(t, func(s *hmstest.Server) { s.RefuseSetting("hive.txn.timeout") })
	wantFinding(t, rs, "hive.txn.timeout", "unverified", "refuses to reveal it", "default 300 s")
}

// The findings are in `check`'s output: a ? line for what could not be
// verified, the ✗ with its fix, and the JSON form with "unverified".
func TestEventSettingsReported(t *testing.T) {
	rs := settingsOf(t, func(s *hmstest.Server) {
		s.SetSetting("hive.metastore.dml.events", "false")
		s.RefuseSetting("hive.txn.timeout")
	})
	out := text(rs)
	for _, want := range []string{
		"✗ catalog hive: setting hive.metastore.dml.events: \"false\"\n    fix: set hive.metastore.dml.events=true",
		"? catalog hive: setting hive.txn.timeout: the metastore refuses",
		"1 of 7 checks failed (1 could not be verified)",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("text output lacks %q:\n%s", want, out)
		}
	}
	var b bytes.Buffer
	if err := preflight.WriteJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		OK     bool
		Checks []struct {
			Check      string
			OK         bool
			Unverified bool
			Fix        string
		}
	}
	if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var failed, unverified []string
	for _, c := range rep.Checks {
		if !c.OK {
			failed = append(failed, c.Check)
		}
		if c.Unverified {
			unverified = append(unverified, c.Check)
		}
	}
	if rep.OK || len(rep.Checks) != 7 || len(failed) != 1 || !strings.HasSuffix(failed[0], "hive.metastore.dml.events") ||
		len(unverified) != 1 || !strings.HasSuffix(unverified[0], "hive.txn.timeout") {
		t.Fatalf("JSON: ok %v, %d checks, failed %q, unverified %q:\n%s", rep.OK, len(rep.Checks), failed, unverified, b.String())
	}
}

// A metastore that cannot be asked is one finding, not one per setting.
func TestEventSettingsUnreadable(t *testing.T) {
	rs := settingsOf(t, func(s *hmstest.Server) {
		s.InjectFault("get_config_value", hmstest.Fault{Err: "internal error"})
	})
	if len(rs) != 1 || rs[0].OK || rs[0].Check != "catalog hive: settings" ||
		!strings.Contains(rs[0].Detail, "internal error") || rs[0].Fix == "" {
		t.Fatalf("want one failed finding naming the error, got:\n%s", text(rs))
	}
}
