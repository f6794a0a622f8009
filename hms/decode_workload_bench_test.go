package hms_test

import (
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// BenchmarkDecodeWorkload decodes the project benchmark's event mix (hmstest.BenchMix:
// 70% ADD/ALTER_PARTITION over 50 tables, 10% INSERT, 10% ALTER_TABLE, 5%
// CREATE/DROP_TABLE, 5% transaction and statistics events), half json-0.2 and
// half gzip(json-2.0), as written by the fake metastore. Run with -cpu 1 for the
// one-core figure in BENCHMARKS.md.
func BenchmarkDecodeWorkload(b *testing.B) {
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := hmstest.Preload(srv, 20000, hmstest.BenchMix); err != nil {
		b.Fatal(err)
	}
	evs := srv.Events()
	var bytes int
	for _, e := range evs {
		bytes += len(e.Message)
	}
	b.SetBytes(int64(bytes / len(evs)))
	b.ReportAllocs()
	d := hms.Decoder{}
	i := 0
	for b.Loop() {
		if _, err := d.Decode(evs[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(evs) {
			i = 0
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
