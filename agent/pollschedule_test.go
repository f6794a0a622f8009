package agent

import (
	"slices"
	"testing"
	"time"
)

// The poll schedule is tested on simulated time: the waits it chooses are
// compared with the expected sequence, and a master's steps are driven with a
// clock advanced by those waits, counting what the metastore was asked.

func TestPollScheduleLooksSoonAfterEventsThenBacksOffToTheInterval(t *testing.T) {
	t.Parallel()
	s := newPollSchedule(25*time.Millisecond, time.Second)
	var got []time.Duration
	for _, found := range []bool{false, true, false, false, false, false, false, false, false, true, false} {
		got = append(got, s.after(found))
	}
	ms := time.Millisecond
	want := []time.Duration{1000 * ms, 25 * ms, 50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms, 25 * ms, 50 * ms}
	if !slices.Equal(got, want) {
		t.Fatalf("waits %v; want %v", got, want)
	}
}

func TestPollScheduleBusyIntervalNeverAboveThePollInterval(t *testing.T) {
	t.Parallel()
	for _, busy := range []time.Duration{0, 5 * time.Second} {
		s := newPollSchedule(busy, 10*time.Millisecond)
		if w := s.after(true); w != 10*time.Millisecond {
			t.Errorf("busy %s, poll interval 10ms: wait after events %s; want 10ms", busy, w)
		}
	}
	s := newPollSchedule(0, time.Second)
	if w := s.after(true); w != defaultBusyPollInterval {
		t.Errorf("unset busy interval: wait after events %s; want the default %s", w, defaultBusyPollInterval)
	}
}

// simulatePolls runs the master's steps for d of simulated time, waiting
// between them what the outcome and the schedule say (as catalogLoop.run
// does), calling arrive with the simulated time before each step. It returns
// the waits and the metastore calls the steps made.
func simulatePolls(r *rig, d time.Duration, arrive func(at time.Duration)) (waits []time.Duration, calls int) {
	r.t.Helper()
	r.log.mu.Lock()
	before := r.log.calls
	r.log.mu.Unlock()
	for now := time.Duration(0); now < d; {
		if arrive != nil {
			arrive(now)
		}
		r.showCommitted()
		out, err := r.step()
		if err != nil {
			r.t.Fatalf("step at %s: %v", now, err)
		}
		switch out {
		case again:
		case idle, drained:
			w := r.l.poll.after(out == drained)
			waits = append(waits, w)
			now += w
		default:
			r.t.Fatalf("master step outcome %d at %s; want again, idle or drained", out, now)
		}
	}
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return waits, r.log.calls - before
}

// An idle cluster must cost the metastore no more calls than a fixed poll
// interval did: one get_current_notificationEventId per interval.
func TestMasterPollsAnIdleLogOncePerPollInterval(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 5)
	store := newMemStore()
	store.commitAs(5, 0)
	seedMember(store, "m0", 5, 0)
	r := newRig(t, log, store, rigOpts{})
	r.becomeMaster()
	_, calls := simulatePolls(r, time.Minute, nil)
	if calls != 60 {
		t.Fatalf("%d metastore calls in an idle minute at poll interval 1s; want 60, as with a fixed interval", calls)
	}
}

// After a poll that found events the master looks again soon, and backs off
// while the log stays idle: an event arriving just after the busy poll waits
// tens of milliseconds, not the poll interval; the idle minute after a burst
// costs at most the ramp's few polls more than a fixed interval.
func TestMasterLooksAgainSoonAfterEventsAndBacksOff(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	log.add("ALTER_TABLE", 5)
	store := newMemStore()
	store.commitAs(5, 0)
	seedMember(store, "m0", 5, 0)
	r := newRig(t, log, store, rigOpts{})
	r.becomeMaster()
	arrived := false
	waits, calls := simulatePolls(r, time.Minute, func(at time.Duration) {
		if !arrived && at >= 3*time.Second {
			log.add("ALTER_TABLE", 3)
			arrived = true
		}
	})
	r.checkFEHoldsLog(5, nil)
	ms := time.Millisecond
	// Three idle polls (0 s, 1 s, 2 s), the one at 3 s finds the events.
	wantStart := []time.Duration{1000 * ms, 1000 * ms, 1000 * ms, 25 * ms, 50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms}
	if len(waits) < len(wantStart) || !slices.Equal(waits[:len(wantStart)], wantStart) {
		t.Fatalf("waits %v; want them to start %v", waits, wantStart)
	}
	// 60 polls at a fixed interval; the ramp adds log2(1s/25ms) = 6, and the
	// poll that found events made one fetch.
	if calls > 60+6+1 {
		t.Fatalf("%d metastore calls in the minute; want at most 67", calls)
	}
	if calls < 60 {
		t.Fatalf("%d metastore calls in the minute; fewer than one poll per interval means the schedule waited too long", calls)
	}
}
