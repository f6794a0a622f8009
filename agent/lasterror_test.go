package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
)

// A member's published last error (what `hmssync status` shows) carries its
// time, and is cleared once the catalog has applied a batch since; /status keeps
// it, with both times, for the record.
func TestPublishedLastErrorClearsOnceABatchIsApplied(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.start(0, memberOpts{publishStatus: true})
	h.awaitConverged(converge, 0)
	key := etcdPrefix + "/" + testCluster + "/members/" + m.name + "/status"
	published := func() cursorstore.CatalogProgress {
		resp, err := h.etcd.Client.Get(context.Background(), key)
		if err != nil || len(resp.Kvs) == 0 {
			return cursorstore.CatalogProgress{}
		}
		var st cursorstore.MemberStatus
		if err := json.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return st.Catalogs[testCatalog]
	}

	m.fe.InjectFault(fetest.Fault{Native: true, Match: "/changes", HTTPStatus: 503})
	h.churn(3)
	await(t, 10*time.Second, "the failure published with its time", func() (bool, string) {
		p := published()
		return p.LastError != "" && !p.LastErrorTime.IsZero(), fmt.Sprintf("%+v", p)
	})
	m.fe.ClearFaults()
	h.awaitConverged(converge, 0)
	h.churn(3)
	h.awaitConverged(converge, 0)
	await(t, 10*time.Second, "the published last error cleared after a batch applied", func() (bool, string) {
		p := published()
		return p.LastError == "" && p.LastErrorTime.IsZero(), fmt.Sprintf("%+v", p)
	})
	if st := m.catalogStatus(); st.LastError == "" || st.LastErrorAt == nil || st.LastAppliedAt == nil || !st.LastAppliedAt.After(*st.LastErrorAt) {
		t.Errorf("/status: last_error %q at %v, last applied at %v; want the error kept with both times", st.LastError, st.LastErrorAt, st.LastAppliedAt)
	}
}
