package message_test

import (
	"testing"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// BenchmarkDecodeWorkload decodes events written by the fake metastore, half
// json-0.2 and half gzip(json-2.0):
//   - bench-mix: the project benchmark's mix (hmstest.BenchMix: 70%
//     ADD/ALTER_PARTITION over 50 tables, 10% INSERT, 10% ALTER_TABLE, 5%
//     CREATE/DROP_TABLE, 5% transaction and statistics events);
//   - partitions: partition events only (ADD/ALTER/DROP_PARTITION over the
//     same 50 tables), the mixed json/gzip partition-event workload that the
//     one-core decoding goal (50,000 events/s) names.
//
// Run with -cpu 1 for the one-core figures in BENCHMARKS.md (Decoding).
func BenchmarkDecodeWorkload(b *testing.B) {
	for _, c := range []struct {
		name string
		mix  hmstest.Mix
	}{
		{"bench-mix", hmstest.BenchMix},
		{"partitions", hmstest.Mix{Partition: 100}},
	} {
		b.Run(c.name, func(b *testing.B) { decodeWorkload(b, c.mix) })
	}
}

func decodeWorkload(b *testing.B, mix hmstest.Mix) {
	srv := hmstest.NewServer()
	defer srv.Close()
	if err := hmstest.Preload(srv, 20000, mix); err != nil {
		b.Fatal(err)
	}
	evs := srv.Events()
	var bytes int
	partitionEvents := 0
	for _, e := range evs {
		bytes += len(e.Message)
		switch e.Type {
		case "ADD_PARTITION", "ALTER_PARTITION", "DROP_PARTITION":
			partitionEvents++
		}
	}
	b.SetBytes(int64(bytes / len(evs)))
	b.ReportAllocs()
	d := message.NewDecoder("")
	i := 0
	cpu := processCPU(b)
	for b.Loop() {
		if _, err := d.Decode(evs[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(evs) {
			i = 0
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(100*float64(partitionEvents)/float64(len(evs)), "%partition")
}
