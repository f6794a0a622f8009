package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/cursorstore"
)

// A master reports holding a catalog for the pause key only once the cycle that
// was running when the key appeared has ended: the batch it was applying is
// applied and committed first. Followers never report holding.
func TestCatalogPausedAfterTheCycleInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	m := h.startConverged()
	// Hold the master's next apply in flight for a second, below the
	// applier's 2 s timeout, so that it succeeds.
	m.fe.InjectFault(fetest.Fault{Native: true, Match: "/changes", Delay: time.Second, Times: 1})
	h.churn(5)
	await(t, 5*time.Second, "the master's apply in flight", func() (bool, string) {
		return len(m.fe.Faults()) == 0, "the master's FE has not received the next batch"
	})
	batches := m.fe.Changes()
	inFlight := batches[len(batches)-1].To

	h.pauseMaster(m)
	if got := h.masterCursor(); got != inFlight {
		t.Errorf("master cursor %d when the loop reported holding, want %d: the batch in flight (up to %d) was still being applied or committed",
			got, inFlight, inFlight)
	}
	if got := m.catalogStatus().Cursor; got != inFlight {
		t.Errorf("master's own cursor %d when the loop reported holding, want %d", got, inFlight)
	}
	if v := m.metric("hmssync_catalog_paused", `catalog="hive"`); v != 1 {
		t.Errorf("hmssync_catalog_paused = %v on the holding master, want 1", v)
	}
	for _, o := range h.running() {
		if o != m && o.catalogStatus().Paused {
			t.Errorf("follower %s reports holding for the pause key: only the master holds", o.name)
		}
	}

	h.setPause(false)
	h.awaitConverged(converge)
	await(t, 5*time.Second, "the master no longer holding", func() (bool, string) {
		p, v := m.catalogStatus().Paused, m.metric("hmssync_catalog_paused", `catalog="hive"`)
		return !p && v == 0, fmt.Sprintf("status paused %v, hmssync_catalog_paused %v", p, v)
	})
}

// silentPauseStore is a cursor store whose pause watch never delivers a value
// (not started, as far as the agent can tell): a watch that has not caught up
// with etcd yet.
type silentPauseStore struct{ *cursorstore.Store }

func (silentPauseStore) WatchPause(ctx context.Context) cursorstore.Watch[bool] {
	ch := make(chan bool)
	go func() { <-ctx.Done(); close(ch) }()
	return cursorstore.Watch[bool]{C: ch}
}

// The pause key exists but the pause watch has not delivered it: the master
// must not run a cycle on the watch's say-so (it reads etcd instead), and it
// resumes when the key is removed although the watch still says nothing.
func TestPauseKeyHoldsBeforeTheWatchDeliversIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.churn(5)
	h.setPause(true)
	m := h.start(0, memberOpts{wrapStore: func(s *cursorstore.Store) agent.CursorStore { return silentPauseStore{s} }})
	await(t, 10*time.Second, "the master holding for the pause key", func() (bool, string) {
		s := m.catalogStatus()
		return m.isMaster() && s.Paused, fmt.Sprintf("master %v, holding %v, cursor %d", m.isMaster(), s.Paused, s.Cursor)
	})
	if got := m.fe.Changes(); len(got) != 0 {
		t.Fatalf("the master sent %d batches to its FE while the pause key existed (its watch had not delivered it)", len(got))
	}
	if c := h.masterCursor(); c != -1 {
		t.Errorf("master cursor %d committed while paused, want none", c)
	}
	h.setPause(false)
	h.awaitConverged(converge, 0)
}
