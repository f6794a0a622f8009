package retry

import (
	"context"
	"testing"
	"time"
)

func TestDelayDoublesWithinJitterUpToTheCap(t *testing.T) {
	d := NewDelay(100*time.Millisecond, 400*time.Millisecond)
	// The un-jittered sequence is 100, 200, 400, 400 ms; each value may be ±50%.
	for i, base := range []time.Duration{100, 200, 400, 400, 400} {
		base *= time.Millisecond
		got := d.Next()
		if got < base/2 || got > base*3/2 {
			t.Fatalf("delay %d = %v; want within ±50%% of %v", i, got, base)
		}
	}
	d.Reset()
	if got := d.Next(); got < 50*time.Millisecond || got > 150*time.Millisecond {
		t.Fatalf("after Reset the delay is %v; want within ±50%% of 100ms", got)
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep reported a full wait on a cancelled context")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep of 1ms did not report a full wait")
	}
}

func TestJitterStaysWithinItsFraction(t *testing.T) {
	for range 100 {
		if got := Jitter(time.Second, 0.2); got < 800*time.Millisecond || got > 1200*time.Millisecond {
			t.Fatalf("Jitter(1s, 0.2) = %v", got)
		}
	}
}
