package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hmssync/hmssync/applier"
)

func TestClassify(t *testing.T) {
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
