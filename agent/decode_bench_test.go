package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
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
				if _, errs := decodeAll(message.NewDecoder(""), evs, workers); errs != nil {
					b.Fatal(firstError(errs))
				}
			}
			b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkDecodeBatch is what a step does with a fetch of 1000 events of the
// project mix between the fetch and the FE: decode, filter, and count the
// events by type (the apply itself left out).
func BenchmarkDecodeBatch(b *testing.B) {
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := hmstest.Preload(srv, 1000, hmstest.BenchMix); err != nil {
		b.Fatal(err)
	}
	evs := srv.Events()
	a, err := New(Config{
		Cluster: "c", Member: "m", Applier: &memFE{scope: "local", applied: -1}, Elector: &memElector{ch: make(chan struct{})}, Store: newMemStore(),
		Catalogs: []Catalog{{Name: "hive", Source: &memLog{}, Decoder: message.NewDecoder(""), BatchSize: 1000, PollInterval: time.Second}},
	})
	if err != nil {
		b.Fatal(err)
	}
	l := a.loops[0]
	b.ReportAllocs()
	for b.Loop() {
		var d decoded
		if err := l.decode(evs, &d, false); err != nil {
			b.Fatal(err)
		}
		l.rec.eventsCovered(&d)
	}
	b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "events/s")
}
