package hms_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// get_config_value over the real wire: a value, a setting the metastore does
// not know (it answers with the default sent, which is not taken for a value),
// and a refusal (ConfigValSecurityException), which is an answer, not a broken
// connection.
func TestConfigValue(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	// set_ugi is called once per connection: its count tells reconnects.
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, UGIUser: "sync"})
	ctx := ctxT(t)

	s.SetSetting("hive.metastore.dml.events", "false")
	cv, err := c.ConfigValue(ctx, "hive.metastore.dml.events")
	if err != nil || cv != (hms.ConfigValue{Name: "hive.metastore.dml.events", Value: "false", Known: true}) {
		t.Fatalf("a set value: %+v %v; want false, known", cv, err)
	}
	s.SetSetting("hive.metastore.event.listeners", "")
	if cv, err := c.ConfigValue(ctx, "hive.metastore.event.listeners"); err != nil || !cv.Known || cv.Value != "" {
		t.Fatalf("an empty value: %+v %v; want known and empty", cv, err)
	}
	if cv, err := c.ConfigValue(ctx, "hive.metastore.alter.notifications.basic"); err != nil || cv.Known || cv.Value != "" || cv.Refused != "" {
		t.Fatalf("a setting the metastore does not know: %+v %v; want not known, not refused", cv, err)
	}
	conns := s.Calls("set_ugi")
	cv, err = c.ConfigValue(ctx, "javax.jdo.option.ConnectionPassword")
	if err != nil || cv.Known || !strings.Contains(cv.Refused, "cannot be accessed") {
		t.Fatalf("a refused setting: %+v %v; want refused with the metastore's reason", cv, err)
	}
	s.RefuseSetting("hive.txn.timeout")
	if cv, err := c.ConfigValue(ctx, "hive.txn.timeout"); err != nil || cv.Refused == "" {
		t.Fatalf("a setting refused by authorization: %+v %v", cv, err)
	}
	if _, err := c.CurrentEventID(ctx); err != nil || s.Calls("set_ugi") != conns {
		t.Fatalf("after refusals: %v, %d connections (was %d); want the connection kept", err, s.Calls("set_ugi"), conns)
	}
	if _, err := c.ConfigValue(ctx, ""); err == nil {
		t.Fatal("an empty name was sent")
	}
}

// A hostile metastore answering get_config_value with a huge string is cut off
// at the call's 1 MiB budget, not read into memory.
func TestConfigValueReplyBounded(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	s.SetSetting("hive.metastore.event.listeners", strings.Repeat("x", 2<<20))
	_, err := c.ConfigValue(ctxT(t), "hive.metastore.event.listeners")
	if !errors.Is(err, hms.ErrReplyTooLarge) {
		t.Fatalf("a 2 MiB value: %v; want ErrReplyTooLarge", err)
	}
}

// hive.txn.timeout as a duration, for the open-transaction bound.
func TestTxnTimeout(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	ctx := ctxT(t)
	s.SetSetting("hive.txn.timeout", "120s")
	if d, ok, err := c.TxnTimeout(ctx); err != nil || !ok || d != 2*time.Minute {
		t.Fatalf("120s: %v %v %v", d, ok, err)
	}
	s.SetSetting("hive.txn.timeout", "900") // seconds, Hive's unit for it
	if d, ok, err := c.TxnTimeout(ctx); err != nil || !ok || d != 15*time.Minute {
		t.Fatalf("900: %v %v %v", d, ok, err)
	}
	s.UnsetSetting("hive.txn.timeout")
	if d, ok, err := c.TxnTimeout(ctx); err != nil || ok || d != 0 {
		t.Fatalf("not known: %v %v %v; want not ok, the caller's default applies", d, ok, err)
	}
	s.SetSetting("hive.txn.timeout", "soon")
	if _, ok, err := c.TxnTimeout(ctx); err == nil || ok || !strings.Contains(err.Error(), "hive.txn.timeout") {
		t.Fatalf("an unparsable value: %v %v; want an error naming the setting", ok, err)
	}
}

func TestParseHiveDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"86400s", 24 * time.Hour}, {"86400", 24 * time.Hour}, {" 1d ", 24 * time.Hour}, {"2 hours", 2 * time.Hour},
		{"30min", 30 * time.Minute}, {"1500ms", 1500 * time.Millisecond}, {"7DAYS", 7 * 24 * time.Hour}, {"0s", 0},
	} {
		if got, err := hms.ParseHiveDuration(tc.in, time.Second); err != nil || got != tc.want {
			t.Errorf("%q = %v %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "s", "-5s", "1.5h", "10 fortnights", "99999999999999999999s", "9999999999999d"} {
		if got, err := hms.ParseHiveDuration(bad, time.Second); err == nil {
			t.Errorf("%q = %v; want an error", bad, got)
		}
	}
}
