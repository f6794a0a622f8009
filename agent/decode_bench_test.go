package agent

import (
	"fmt"
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// BenchmarkDecodeAll decodes a fetch of 1000 events of the project mix on one
// and on two goroutines.
func BenchmarkDecodeAll(b *testing.B) {
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := hmstest.Preload(srv, 1000, hmstest.BenchMix); err != nil {
		b.Fatal(err)
	}
	evs := srv.Events()
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := decodeAll(hms.Decoder{}, evs, workers); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "events/s")
		})
	}
}
