package hms_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
	"github.com/hmssync/hmssync/hms/message"
)

func hmsResponse(evs ...message.Event) *hmsthrift.NotificationEventResponse {
	r := &hmsthrift.NotificationEventResponse{}
	for _, e := range evs {
		r.Events = append(r.Events, hms.ThriftEvent(e))
	}
	return r
}

// FuzzThriftReply answers get_next_notification with arbitrary bytes after a
// valid reply header: whatever a metastore sends, the client returns (an error
// or events) without panicking and without allocating from announced sizes.
func FuzzThriftReply(f *testing.F) {
	var mu sync.Mutex
	var body []byte
	uri := craftedMetastore(f, true, func(ctx context.Context, p thrift.TProtocol) {
		mu.Lock()
		b := body
		mu.Unlock()
		_, _ = p.Transport().Write(b)
	})
	// Seeds: a valid reply of two events, an empty one, and hostile sizes.
	valid := thrift.NewTMemoryBuffer()
	vp := thrift.NewTBinaryProtocolConf(valid, nil)
	ctx := context.Background()
	_ = vp.WriteFieldBegin(ctx, "success", thrift.STRUCT, 0)
	resp := hmsResponse(message.Event{ID: 1, Type: "INSERT", Message: "{}"}, message.Event{ID: 2, Type: "\xff", Message: "x"})
	_ = resp.Write(ctx, vp)
	_ = vp.WriteFieldStop(ctx)
	f.Add(valid.Bytes())
	f.Add([]byte{0, 0})
	f.Add([]byte{12, 0, 0, 15, 0, 1, 12, 0x40, 0, 0, 0})
	f.Add([]byte{12, 0, 0, 15, 0, 1, 11, 0x7f, 0xff, 0xff, 0xff})
	c, err := hms.NewClient(hms.ClientConfig{URIs: []string{uri}, DialTimeout: time.Second, CallTimeout: 2 * time.Second, MaxReplyBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	f.Fuzz(func(t *testing.T, reply []byte) {
		mu.Lock()
		body = reply
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		fetch, err := c.NextEvents(ctx, 0, 100, nil)
		if err == nil && len(fetch.Events) > 200 {
			t.Fatalf("%d events returned for a request of 100", len(fetch.Events))
		}
	})
}
