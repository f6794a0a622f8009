package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hmssync/hmssync/applier/fetest"
)

// An FE that does not know the catalog (native 404, protocol rule 3) is a
// configuration error: /readyz fails quoting the FE's answer (not the password),
// the member retries slowly, keeps its cursor and never full-refreshes (a full
// refresh would get the same 404); once the FE knows the catalog it catches up
// from where it was.
func TestFEWithoutTheCatalogIsAConfigurationError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	master := h.startConverged()
	f := h.members[(master.i+1)%3]
	own := f.catalogStatus().Cursor
	refreshes := h.fullRefreshes(f.i)
	const answer = "catalog hive is not defined on this FE"
	f.fe.InjectFault(fetest.Fault{Native: true, Match: "/changes", HTTPStatus: http.StatusNotFound, Message: answer})
	h.churn(5)

	await(t, 10*time.Second, "/readyz failing on the configuration error, quoting the FE", func() (bool, string) {
		code, body := f.get("/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "FE configuration error") && strings.Contains(body, answer), fmt.Sprintf("%d %s", code, body)
	})
	if _, body := f.get("/readyz"); strings.Contains(body, "credentials") {
		t.Errorf("/readyz blames the credentials for an unknown catalog: %s", body)
	}
	await(t, 10*time.Second, "configuration retries counted", func() (bool, string) {
		v := f.metric("hmssync_retries_total", `class="configuration"`)
		return v >= 2, fmt.Sprintf("retries_total{class=configuration} = %v", v)
	})
	s := f.catalogStatus()
	if !s.ConfigFailing || s.AuthFailing || !strings.Contains(s.LastError, answer) {
		t.Errorf("/status: config_failing %v auth_failing %v last_error %q; want a configuration error quoting %q", s.ConfigFailing, s.AuthFailing, s.LastError, answer)
	}
	if s.Cursor != own {
		t.Errorf("cursor %d during the configuration error, want it kept at %d", s.Cursor, own)
	}
	if got := h.fullRefreshes(f.i); got != refreshes {
		t.Errorf("FE %d got %d full refreshes for an unknown catalog; a full refresh cannot fix it", f.i, got-refreshes)
	}
	if v := f.metric("hmssync_self_heals_total"); v != 0 {
		t.Errorf("self_heals_total = %v: an unknown catalog was taken for a poison batch", v)
	}
	logged := f.logs.FilterMessageSnippet("FE configuration error").FilterLevelExact(zapcore.ErrorLevel).All()
	if len(logged) == 0 {
		t.Fatal("the configuration error was not logged at error level")
	}
	if strings.Contains(logged[0].Message, "password") {
		t.Errorf("the configuration error's log line blames the password: %q", logged[0].Message)
	}

	f.fe.ClearFaults()
	h.awaitConverged(converge)
	if got := h.fullRefreshes(f.i); got != refreshes {
		t.Errorf("FE %d: %d full refreshes after the catalog appeared, want none", f.i, got-refreshes)
	}
	await(t, 5*time.Second, "the configuration error cleared from /status", func() (bool, string) {
		s := f.catalogStatus()
		return !s.ConfigFailing, fmt.Sprintf("%+v", s)
	})
}
