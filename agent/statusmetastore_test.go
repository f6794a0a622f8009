package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// clusterStatus is what `hmssync status` reads.
func (h *harness) clusterStatus() cursorstore.ClusterStatus {
	h.t.Helper()
	cs, err := cursorstore.New(h.etcd.Client, etcdPrefix, testCluster, 5*time.Second, zap.NewNop()).Statuses(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return cs
}

// A master holding for the pause key keeps reading the metastore's current
// event id: its /status, its lag and the status it publishes (what `hmssync
// status` shows) follow the metastore while its cursor stays; and the time the
// pause began is recorded for status.
func TestPausedMasterKeepsReadingTheMetastore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.churn(5)
	m := h.start(0, memberOpts{publishStatus: true})
	h.awaitConverged(converge, 0)
	before := time.Now()
	h.pauseMaster(m)
	held := m.catalogStatus().Cursor

	h.churn(5)
	target := h.hms.CurrentEventID()
	await(t, 10*time.Second, "the paused master's /status to follow the metastore", func() (bool, string) {
		s := m.catalogStatus()
		return s.HMSCurrent == target && s.LagEvents == target-held && s.HMSCurrentAt != nil,
			fmt.Sprintf("hms_current %d (metastore at %d), lag %d, cursor %d (held at %d)", s.HMSCurrent, target, s.LagEvents, s.Cursor, held)
	})
	if c := m.catalogStatus().Cursor; c != held {
		t.Fatalf("paused master's cursor moved from %d to %d", held, c)
	}
	await(t, 10*time.Second, "the published status to show the metastore's id and the lag against it", func() (bool, string) {
		cs := h.clusterStatus()
		v, ok := cs.Metastore[testCatalog]
		lag := int64(-1)
		if ok && v.Lag != nil {
			lag = *v.Lag
		}
		return ok && v.CurrentEventID == target && lag == target-held && v.ReadBy == m.name,
			fmt.Sprintf("metastore %+v (lag %d), want %d with lag %d, read by %s", v, lag, target, target-held, m.name)
	})
	cs := h.clusterStatus()
	if !cs.Paused || cs.PausedSince.Before(before.Add(-time.Second)) || cs.PausedSince.After(time.Now()) {
		t.Errorf("status: paused %v since %s; want paused since the pause key was put (after %s)", cs.Paused, cs.PausedSince, before)
	}
	if mc := cs.Members[0].Catalogs[testCatalog]; mc.MetastoreLag == nil || *mc.MetastoreLag != target-held {
		t.Errorf("status: the master's metastore_lag %v; want %d", mc.MetastoreLag, target-held)
	}
	h.setPause(false)
	h.awaitConverged(converge, 0)
}

// A member whose reads of the metastore fail says so in /status and in the
// status it publishes, with the error and since when; the first read that
// succeeds clears it.
func TestFailingMetastoreReadsArePublished(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.churn(3)
	m := h.start(0, memberOpts{publishStatus: true})
	h.awaitConverged(converge, 0)
	const msg = "metastore database is locked"
	h.hms.InjectFault("get_current_notificationEventId", hmstest.Fault{Err: msg})
	await(t, 10*time.Second, "the failing reads in the published status", func() (bool, string) {
		s := m.catalogStatus()
		cs := h.clusterStatus()
		mc := cs.Members[0].Catalogs[testCatalog]
		return strings.Contains(s.MetastoreError, msg) && s.MetastoreFailingSince != nil &&
				strings.Contains(mc.MetastoreError, msg) && !mc.MetastoreFailingSince.IsZero(),
			fmt.Sprintf("/status metastore_error %q, published %q", s.MetastoreError, mc.MetastoreError)
	})
	h.hms.ClearFaults()
	await(t, 10*time.Second, "the published status to clear the failure", func() (bool, string) {
		s := m.catalogStatus()
		mc := h.clusterStatus().Members[0].Catalogs[testCatalog]
		return s.MetastoreError == "" && mc.MetastoreError == "", fmt.Sprintf("/status %q, published %q", s.MetastoreError, mc.MetastoreError)
	})
}
