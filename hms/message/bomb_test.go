//go:build !race

// The race detector makes the 300 MiB bomb take a minute and distorts heap
// figures, so this test runs without it: .ci/run runs it on its own.

package message

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// peakHeap runs fn while sampling the heap in use, and returns the largest
// increase over the heap in use before fn.
func peakHeap(fn func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	peak := base
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var s runtime.MemStats
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&s)
			peak = max(peak, s.HeapInuse)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapInuse)
	return peak - base
}

// gzipBase64 is the gzip(json-2.0) form of the text parts concatenated, written
// through repeat copies of filler in the middle, without holding the whole
// text.
func gzipBase64(t testing.TB, head, filler string, repeat int, tail string) string {
	t.Helper()
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	w.Write([]byte(head))
	for range repeat {
		w.Write([]byte(filler))
	}
	w.Write([]byte(tail))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// perEventHeapBound is the heap one Decode may use beyond its message, as
// SECURITY.md states it: twice the inflated bound (the inflate buffer and the
// smaller buffers it outgrew, garbage until the collector runs), the
// descriptors' bound, and the decoded base64 of the message.
func perEventHeapBound(message int) uint64 {
	return uint64(2*MaxInflatedMessage+MaxDescriptorBytes) + uint64(message)
}

// Decompression bombs are refused by an error naming the event, with the heap
// they cost staying within the stated bound (read without the bounds, they
// would cost ~0.9 GiB and ~578 MiB).
func TestDecodeBombsStayWithinTheHeapBound(t *testing.T) {
	// 300 MiB of blanks inside a JSON string: past any bound, yet a few hundred
	// kilobytes compressed.
	inflateBomb := Event{ID: 901, Type: EventCreateTable, Format: FormatGzip,
		Message: gzipBase64(t, `{"db":"a","table":"b","x":"`, strings.Repeat(" ", 64<<10), 300<<4, `"}`)}

	// A table of 200 partition keys of 1000 bytes each, and 3000 partition
	// objects listing only values: each name repeats every key, 200 KB a name.
	var keys []string
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("k%03d%s", i, strings.Repeat("k", 996)))
	}
	values := make([]string, len(keys))
	for i := range values {
		values[i] = "v"
	}
	part := quote(`{"1":{"lst":["str",200,"` + strings.Join(values, `","`) + `"]}}`)
	head := `{"db":"a","table":"b","tableObjJson":` + quote(tjsonTable("a", "b", false, keys...)) + `,"partitionListJson":[` + part
	namesBomb := Event{ID: 902, Type: EventAddPartition, Format: FormatGzip,
		Message: gzipBase64(t, head, ","+part, 2999, `]}`)}

	for _, c := range []struct {
		name string
		ev   Event
		says string
	}{
		{"gzip bomb", inflateBomb, "decompresses to more than"},
		{"partition-name bomb", namesBomb, "refused as a decompression bomb"},
	} {
		var err error
		peak := peakHeap(func() { _, err = Decoder{}.Decode(c.ev) })
		var de *DecodeError
		if !errors.As(err, &de) || de.EventID != c.ev.ID || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s (%d bytes): %v; want a *DecodeError for event %d saying %q", c.name, len(c.ev.Message), err, c.ev.ID, c.says)
		}
		if bound := perEventHeapBound(len(c.ev.Message)); peak > bound {
			t.Errorf("%s: peak heap grew by %d MiB, beyond the stated %d MiB", c.name, peak>>20, bound>>20)
		}
		t.Logf("%s: %d-byte message, peak heap +%d MiB", c.name, len(c.ev.Message), peak>>20)
	}
}
