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

// The backoff library gives up ("Stop", -1 ns) once an interval could pass its
// default MaxElapsedTime of 15 minutes: a jittered interval of 13 min reaches
// 15.6 min. A slow auth retry that returned Stop would retry at once, for ever.
func TestJitterOfLongIntervalsNeverStops(t *testing.T) {
	for _, d := range []time.Duration{13 * time.Minute, 20 * time.Minute, 24 * time.Hour} {
		lo, hi := time.Duration(float64(d)*0.8), time.Duration(float64(d)*1.2)
		for range 200 {
			if got := Jitter(d, 0.2); got < lo || got > hi {
				t.Fatalf("Jitter(%v, 0.2) = %v; want within [%v, %v]", d, got, lo, hi)
			}
		}
	}
}

func TestDelayOfLongIntervalsNeverStops(t *testing.T) {
	d := NewDelay(20*time.Minute, time.Hour)
	for i := range 50 {
		if got := d.Next(); got < 10*time.Minute {
			t.Fatalf("delay %d = %v; want at least 10m (half the initial 20m)", i, got)
		}
	}
}
