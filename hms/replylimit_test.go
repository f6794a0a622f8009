package hms_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// craftedMetastore answers every call on loopback with what reply writes after
// the reply's message header: a hostile metastore, below the generated code.
// closeAfter closes the connection after each reply (so that a client reading
// a truncated reply sees its end at once rather than waiting for its deadline).
func craftedMetastore(t testing.TB, closeAfter bool, reply func(ctx context.Context, p thrift.TProtocol)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer nc.Close()
				ctx := context.Background()
				trans := thrift.NewTBufferedTransport(thrift.NewTSocketFromConnConf(nc, nil), 4096)
				p := thrift.NewTBinaryProtocolConf(trans, &thrift.TConfiguration{TBinaryStrictRead: thrift.BoolPtr(true), TBinaryStrictWrite: thrift.BoolPtr(true)})
				for {
					name, _, seq, err := p.ReadMessageBegin(ctx)
					if err != nil {
						return
					}
					if p.Skip(ctx, thrift.STRUCT) != nil || p.ReadMessageEnd(ctx) != nil {
						return
					}
					_ = p.WriteMessageBegin(ctx, name, thrift.REPLY, seq)
					reply(ctx, p)
					if p.Flush(ctx) != nil || closeAfter {
						return
					}
				}
			})
		}
	})
	return "thrift://" + ln.Addr().String()
}

// heapAllocated runs fn and returns the bytes it allocated.
func heapAllocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A reply of a few bytes announcing 2^30 events made the generated code
// allocate 8 GiB at once (make([]*NotificationEvent, 0, size)).
func TestAnnouncedListSizeIsCapped(t *testing.T) {
	uri := craftedMetastore(t, false, func(ctx context.Context, p thrift.TProtocol) {
		_ = p.WriteFieldBegin(ctx, "success", thrift.STRUCT, 0)
		_ = p.WriteFieldBegin(ctx, "events", thrift.LIST, 1)
		_ = p.WriteListBegin(ctx, thrift.STRUCT, 1<<30)
	})
	c := newClient(t, hms.ClientConfig{URIs: []string{uri}})
	var err error
	alloc := heapAllocated(func() { _, err = c.NextEvents(ctxT(t), 0, 1000, nil) })
	if err == nil || !strings.Contains(err.Error(), "1073741824 elements") || !strings.Contains(err.Error(), "get_next_notification") {
		t.Fatalf("NextEvents: %v; want an error naming the call and the announced 1073741824 elements", err)
	}
	if alloc > 16<<20 {
		t.Errorf("reading the reply allocated %d MiB; want at most 16", alloc>>20)
	}
}

// On the unframed transport nothing else bounds how much a reply can stream
// in, so each call has a byte budget.
func TestReplyBytesAreBudgeted(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	uri := craftedMetastore(t, false, func(ctx context.Context, p thrift.TProtocol) {
		_ = p.WriteFieldBegin(ctx, "success", thrift.STRUCT, 0)
		_ = p.WriteFieldBegin(ctx, "events", thrift.LIST, 1)
		_ = p.WriteListBegin(ctx, thrift.STRUCT, 8)
		for i := range 8 {
			ev := hms.ThriftEvent(message.Event{ID: int64(i + 1), Type: "INSERT", Message: big})
			if ev.Write(ctx, p) != nil {
				return
			}
		}
		_ = p.WriteListEnd(ctx)
		_ = p.WriteFieldStop(ctx)
		_ = p.WriteFieldStop(ctx)
	})
	c := newClient(t, hms.ClientConfig{URIs: []string{uri}, MaxReplyBytes: 4 << 20})
	_, err := c.NextEvents(ctxT(t), 0, 8, nil)
	if err == nil || !errors.Is(err, hms.ErrReplyTooLarge) || !strings.Contains(err.Error(), "larger than 4194304 bytes") || !strings.Contains(err.Error(), "batch_size") {
		t.Fatalf("NextEvents of 8 MiB with a 4 MiB budget: %v; want the budget named, and what to do", err)
	}
	// The same reply within a larger budget is read whole: the budget is what
	// refused it.
	c2 := newClient(t, hms.ClientConfig{URIs: []string{uri}, MaxReplyBytes: 16 << 20})
	f, err := c2.NextEvents(ctxT(t), 0, 8, nil)
	if err != nil || len(f.Events) != 8 {
		t.Fatalf("NextEvents of 8 MiB with a 16 MiB budget: %d events, %v; want 8", len(f.Events), err)
	}
}

// Maps and sets are capped as lists are, also inside skipped fields.
func TestAnnouncedMapAndSetSizesAreCapped(t *testing.T) {
	for _, c := range []struct {
		kind  string
		write func(ctx context.Context, p thrift.TProtocol)
	}{
		{"map", func(ctx context.Context, p thrift.TProtocol) {
			_ = p.WriteMapBegin(ctx, thrift.STRING, thrift.STRING, 1<<23)
		}},
		{"set", func(ctx context.Context, p thrift.TProtocol) { _ = p.WriteSetBegin(ctx, thrift.STRING, 1<<23) }},
	} {
		uri := craftedMetastore(t, false, func(ctx context.Context, p thrift.TProtocol) {
			// An unknown field (id 9) of the result: the client skips it.
			_ = p.WriteFieldBegin(ctx, "unknown", map[string]thrift.TType{"map": thrift.MAP, "set": thrift.SET}[c.kind], 9)
			c.write(ctx, p)
		})
		cl := newClient(t, hms.ClientConfig{URIs: []string{uri}})
		_, err := cl.CurrentEventID(ctxT(t))
		if err == nil || !strings.Contains(err.Error(), "a "+c.kind+" of 8388608 elements") {
			t.Errorf("%s of 2^23 elements: %v; want it refused by its size", c.kind, err)
		}
	}
}

// A batch of large events beyond the budget is not refused for ever: it is
// asked for again with fewer events, and the backlog drains.
func TestOversizedBatchIsReadInSmallerBatches(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	big := strings.Repeat("x", 1<<20)
	for range 8 {
		s.Append(message.Event{Type: "INSERT", Message: big, Format: message.FormatJSON})
	}
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}, MaxReplyBytes: 3 << 20})
	var got int64
	for got < 8 {
		f, err := c.NextEvents(ctxT(t), got, 8, nil)
		if err != nil {
			t.Fatalf("NextEvents after %d: %v", got, err)
		}
		if len(f.Events) == 0 || len(f.Events) > 2 {
			t.Fatalf("NextEvents after %d with a 3 MiB budget: %d events of 1 MiB; want 1 or 2", got, len(f.Events))
		}
		got = f.Last
	}
}
