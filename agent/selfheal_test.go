package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want failureClass
	}{
		{"poison event", &poisonError{eventID: 7, eventType: "ALTER_TABLE", err: errors.New("bad json")}, classDeterministic},
		{"FE rejects a statement", &applyError{err: &applier.Error{Class: applier.Deterministic, Err: errors.New("syntax")}}, classDeterministic},
		{"FE auth", &applyError{err: &applier.Error{Class: applier.Auth, Err: errors.New("401")}}, classAuth},
		{"FE without the catalog", &applyError{err: &applier.Error{Class: applier.Configuration, Err: errors.New("404")}}, classConfig},
		{"FE 5xx", &applyError{err: &applier.Error{Class: applier.Transient, Err: errors.New("503")}}, classTransient},
		{"metastore down", fmt.Errorf("fetch: %w", errors.New("connection refused")), classTransient},
		{"deadline", context.DeadlineExceeded, classTransient},
		{"role lost", fmt.Errorf("commit: %w", errLostLeadership), classRoleLost},
	}
	for _, c := range cases {
		if got := classify(c.err); got != c.want {
			t.Errorf("%s: classify = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestSignalNeverLosesAWakeUp(t *testing.T) {
	t.Parallel()
	s := newSignal()
	ch := s.wait()
	s.fire()
	select {
	case <-ch:
	default:
		t.Fatal("a waiter that took the channel before fire was not woken")
	}
	select {
	case <-s.wait():
		t.Fatal("the fresh channel is already closed")
	default:
	}
}

// The slow retry after an auth or configuration failure waits about
// retry.auth_interval whatever its length: above 12.5 min the backoff library
// answers "stop" (-1 ns), which must not make the loop retry at once, for ever.
func TestSlowRetryOfLongAuthIntervalsWaits(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{13 * time.Minute, time.Hour} {
		for range 100 {
			if got := jitter(d); got < d*8/10 || got > d*12/10 {
				t.Fatalf("jitter(%v) = %v; want within ±20%%", d, got)
			}
		}
	}
}
