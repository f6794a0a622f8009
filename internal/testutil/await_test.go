package testutil

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// recorder stands in for the test Await is given: it records Fatalf's message
// and ends the goroutine, as testing.T's Fatalf does.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Await with r on a goroutine of its own (Fatalf ends it) and waits for it.
func (r *recorder) run(timeout time.Duration, what string, cond func() (bool, string)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		Await(r, timeout, what, cond)
	}()
	<-done
}

func TestAwaitFailsWithTheLastReasonWhenTheConditionNeverHolds(t *testing.T) {
	var r recorder
	calls := 0
	const timeout = 100 * time.Millisecond
	start := time.Now()
	r.run(timeout, "the cursor to reach 7", func() (bool, string) {
		calls++
		return false, fmt.Sprintf("cursor %d", calls)
	})
	elapsed := time.Since(start)
	if r.fatal == "" {
		t.Fatal("Await returned although the condition never held")
	}
	if calls < 2 {
		t.Fatalf("Await evaluated the condition %d time(s) in %s: it did not poll", calls, timeout)
	}
	want := fmt.Sprintf("timed out after %s waiting for the cursor to reach 7: cursor %d", timeout, calls)
	if r.fatal != want {
		t.Errorf("Await failed with %q, want %q (the last reason)", r.fatal, want)
	}
	if elapsed < timeout {
		t.Errorf("Await failed after %s, before its timeout of %s", elapsed, timeout)
	}
}

func TestAwaitReturnsOnceTheConditionHolds(t *testing.T) {
	var r recorder
	calls := 0
	r.run(10*time.Second, "the third evaluation", func() (bool, string) {
		calls++
		return calls == 3, fmt.Sprintf("evaluation %d", calls)
	})
	if r.fatal != "" {
		t.Fatalf("Await failed although the condition held at the third evaluation: %s", r.fatal)
	}
	if calls != 3 {
		t.Errorf("Await evaluated the condition %d times, want 3 (it stops once it holds)", calls)
	}
}
