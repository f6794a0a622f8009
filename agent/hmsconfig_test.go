package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/sasltest"
)

// A member sent to a metastore that requires Kerberos, without Kerberos
// configured: /readyz fails naming the metastore setting, the cursor is kept,
// and once pointed right the member resumes without a full refresh.
func TestMetastoreRequiringSASLFailsReadiness(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.churn(5)
	ms := []*member{h.start(0, memberOpts{}), h.start(1, memberOpts{}), h.start(2, memberOpts{})}
	h.awaitConverged(converge)
	master := h.master(5 * time.Second)
	f := ms[0]
	if f == master {
		f = ms[1]
	}
	own := f.catalogStatus().Cursor
	before := h.fullRefreshes(f.i)
	f.stop()

	kerberized := hmstest.NewServer(hmstest.WithSASL(&sasltest.Acceptor{Keytab: keytab.New()}))
	defer kerberized.Close()
	bad := h.start(f.i, memberOpts{hmsURI: kerberized.URI()})
	h.churn(10)
	await(t, 10*time.Second, "/readyz failing on the metastore's configuration", func() (bool, string) {
		code, body := bad.get("/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "metastore connection misconfigured") &&
			strings.Contains(body, "hive.metastore.sasl.enabled"), fmt.Sprintf("%d %s", code, body)
	})
	await(t, 10*time.Second, "the retry counted as hms_config", func() (bool, string) {
		return bad.metric("hmssync_retries_total", `class="hms_config"`) >= 1, ""
	})
	if s := bad.catalogStatus(); s.Cursor != own {
		t.Errorf("cursor %d after configuration failures, want it kept at %d", s.Cursor, own)
	}
	bad.stop()
	h.start(f.i, memberOpts{})
	h.awaitConverged(converge)
	if got := h.fullRefreshes(f.i); got != before {
		t.Errorf("FE %d: %d full refreshes after the metastore was fixed, want none", f.i, got-before)
	}
}
