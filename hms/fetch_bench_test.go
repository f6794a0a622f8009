package hms_test

import (
	"context"
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// BenchmarkNextEvents reads a fetch of 1000 events of the project mix from the
// fake metastore over Thrift (one op is one fetch); allocs/op and B/op are the
// client's and the fake's together, the fake's unchanged between versions.
func BenchmarkNextEvents(b *testing.B) {
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := hmstest.Preload(srv, 1000, hmstest.BenchMix); err != nil {
		b.Fatal(err)
	}
	c, err := hms.NewClient(hms.ClientConfig{URIs: []string{srv.URI()}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		f, err := c.NextEvents(ctx, 0, 1000, nil)
		if err != nil || len(f.Events) != 1000 {
			b.Fatalf("fetched %d events, %v; want 1000", len(f.Events), err)
		}
	}
	reportCPU(b, cpu)
}
