package hms

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

// encodeStrings writes strings the way a metastore does (i32 length, bytes).
func encodeStrings(t *testing.T, ss ...string) *thrift.TMemoryBuffer {
	t.Helper()
	buf := thrift.NewTMemoryBuffer()
	w := thrift.NewTBinaryProtocolConf(buf, thriftConfig)
	for _, s := range ss {
		if err := w.WriteString(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return buf
}

func TestBinaryProtocolReadsStringsOfEverySize(t *testing.T) {
	ctx := context.Background()
	want := []string{
		"", "short", strings.Repeat("x", 63), strings.Repeat("y", 64), "ünïcödé " + strings.Repeat("z", 4000),
		strings.Repeat("large ", directStringMax/6+100), // beyond directStringMax: the chunked path
		"after the large one",
	}
	p := newBinaryProtocol(encodeStrings(t, want...), thriftConfig)
	for i, w := range want {
		got, err := p.ReadString(ctx)
		if err != nil {
			t.Fatalf("string %d: %v", i, err)
		}
		if got != w {
			t.Fatalf("string %d: got %d bytes %.20q…, want %d bytes %.20q…", i, len(got), got, len(w), w)
		}
	}
	if _, err := p.ReadString(ctx); err == nil {
		t.Fatal("reading past the end: want an error")
	}
}

func TestBinaryProtocolRejectsBadLengths(t *testing.T) {
	ctx := context.Background()
	stream := func(length int32) *thrift.TMemoryBuffer {
		buf := thrift.NewTMemoryBuffer()
		if err := thrift.NewTBinaryProtocolConf(buf, thriftConfig).WriteI32(ctx, length); err != nil {
			t.Fatal(err)
		}
		_, _ = buf.WriteString("abc")
		return buf
	}
	for _, c := range []struct {
		name   string
		length int32
		kind   int
	}{
		{"negative", -5, thrift.NEGATIVE_SIZE},
		{"beyond the message limit", thriftConfig.GetMaxMessageSize() + 1, thrift.SIZE_LIMIT},
	} {
		_, err := newBinaryProtocol(stream(c.length), thriftConfig).ReadString(ctx)
		var te thrift.TProtocolException
		if !errors.As(err, &te) || te.TypeId() != c.kind {
			t.Errorf("%s: got %v, want a protocol exception of type %d", c.name, err, c.kind)
		}
	}
	// A length at the limit with 3 bytes behind it (a corrupt stream) fails
	// for want of data, having read in chunks rather than allocated 1 GiB.
	if _, err := newBinaryProtocol(stream(thriftConfig.GetMaxMessageSize()), thriftConfig).ReadString(ctx); err == nil {
		t.Error("a 1 GiB length with 3 bytes of data: want an error")
	}
}

// Short strings that repeat (an event's type, format, catalog, database, table)
// are read into the string read before: no allocation, and the map of them
// stays within its bound however many different ones arrive.
func TestBinaryProtocolReusesShortStrings(t *testing.T) {
	ctx := context.Background()
	const reads = 100
	var ss []string
	for range reads + 2 { // the first read, AllocsPerRun's warm-up and its reads
		ss = append(ss, "ADD_PARTITION", "gzip(json-2.0)", strings.Repeat("t", internMaxLen))
	}
	p := newBinaryProtocol(encodeStrings(t, ss...), thriftConfig)
	read := func() {
		for _, want := range ss[:3] {
			got, err := p.ReadString(ctx)
			if err != nil || got != want {
				t.Fatalf("read %q, %v; want %q", got, err, want)
			}
		}
	}
	read() // first seen: allocated and kept
	if allocs := testing.AllocsPerRun(reads, read); allocs != 0 {
		t.Errorf("reading three short strings seen before allocated %.1f times, want 0", allocs)
	}

	var many []string
	for i := range 3 * internMaxEntries {
		many = append(many, fmt.Sprintf("table_%d", i))
	}
	p = newBinaryProtocol(encodeStrings(t, many...), thriftConfig)
	for i, want := range many {
		got, err := p.ReadString(ctx)
		if err != nil || got != want {
			t.Fatalf("string %d: read %q, %v; want %q", i, got, err, want)
		}
		if len(p.interned) > internMaxEntries {
			t.Fatalf("after %d different strings %d are kept, bound %d", i+1, len(p.interned), internMaxEntries)
		}
	}
}
