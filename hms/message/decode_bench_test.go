package message

import (
	"testing"
)

// BenchmarkDecode measures decoding of partition-heavy events from the real corpus
// (ADD_PARTITION and ALTER_PARTITION with full Table and Partition objects), in
// each encoding and mixed half and half. hmstest's workload benchmark
// (BenchmarkDecodeWorkload in decode_workload_bench_test.go) measures the mix of
// reference events the project's benchmark uses.
func BenchmarkDecode(b *testing.B) {
	corpus := map[int64]Event{}
	for _, ev := range realCorpus(b) {
		corpus[ev.ID] = ev
	}
	gz := func(ev Event) Event {
		ev.Message, ev.Format = gzipMessage(b, ev.Message), FormatGzip
		return ev
	}
	jsonEvents := []Event{corpus[102], corpus[104], corpus[105]}
	gzipEvents := []Event{gz(corpus[102]), gz(corpus[104]), corpus[107]}
	sets := []struct {
		name string
		evs  []Event
	}{
		{"json", jsonEvents},
		{"gzip", gzipEvents},
		{"mixed", append(append([]Event{}, jsonEvents...), gzipEvents...)},
	}
	for _, set := range sets {
		b.Run(set.name, func(b *testing.B) {
			benchmarkDecode(b, set.evs)
		})
	}
}

func benchmarkDecode(b *testing.B, evs []Event) {
	var bytes int
	for _, ev := range evs {
		bytes += len(ev.Message)
	}
	b.SetBytes(int64(bytes / len(evs)))
	b.ReportAllocs()
	d := NewDecoder("")
	i := 0
	for b.Loop() {
		if _, err := d.Decode(evs[i]); err != nil {
			b.Fatal(err)
		}
		i++
		if i == len(evs) {
			i = 0
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
