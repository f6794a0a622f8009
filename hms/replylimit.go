package hms

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/thrift/lib/go/thrift"
)

// A metastore's reply is untrusted input, and Thrift's generated code trusts it:
// it pre-allocates every list, map and set from the size the reply announces
// (make(..., 0, size)), so a 14-byte reply declaring 2^30 events asks for 8 GiB
// at once; and on the default unframed transport nothing bounds how many bytes a
// reply may stream in. replyLimit bounds both, per call, below the generated
// code: limitedProtocol refuses containers announced larger than maxElements,
// and the connection's transport refuses to read more than maxBytes.

const (
	// DefaultMaxReplyBytes is the byte budget of one metastore reply unless
	// ClientConfig.MaxReplyBytes says otherwise. A batch of 1000 gzip messages
	// of thousands of partitions is tens of megabytes.
	DefaultMaxReplyBytes = 256 << 20
	// maxListingElements caps the containers of listing replies (databases,
	// tables, partition names of one table), and of every reply that names
	// no tighter cap. Its worst case is 4M string headers: 64 MiB.
	maxListingElements = 1 << 22
	// minEventElements is the container cap of a notification reply asked for
	// fewer events; above it the cap is twice the events asked for, since a
	// metastore never sends more than asked.
	minEventElements = 64
)

// ErrReplyTooLarge is wrapped by the error of a call whose reply outgrew its
// byte budget. NextEvents answers it by asking for fewer events.
var ErrReplyTooLarge = errors.New("metastore reply larger than its byte budget")

// replyLimit is what the current call may still read.
type replyLimit struct {
	method      string
	maxElements int
	maxBytes    int64
	bytesLeft   int64
}

// reset starts a call's budget.
func (l *replyLimit) reset(method string, maxElements int, maxBytes int64) {
	l.method, l.maxElements, l.maxBytes, l.bytesLeft = method, maxElements, maxBytes, maxBytes
}

// take counts n bytes read from the wire; it fails once the budget is spent.
func (l *replyLimit) take(n int) error {
	l.bytesLeft -= int64(n)
	if l.bytesLeft < 0 {
		return thrift.NewTProtocolExceptionWithType(thrift.SIZE_LIMIT, fmt.Errorf(
			"%w: the reply to %s is larger than %d bytes; if single events are that large, lower the catalog's batch_size", ErrReplyTooLarge, l.method, l.maxBytes))
	}
	return nil
}

// readCap is how many bytes a read may ask the wire for: never more than the
// budget has left plus one, so that a refused reply is noticed without reading
// (and buffering) far beyond it.
func (l *replyLimit) readCap(want int) int {
	if l.bytesLeft < int64(want) {
		return int(max(l.bytesLeft, 0)) + 1
	}
	return want
}

func (l *replyLimit) checkContainer(kind string, size int) error {
	if size > l.maxElements {
		return thrift.NewTProtocolExceptionWithType(thrift.SIZE_LIMIT, fmt.Errorf(
			"the reply to %s announces a %s of %d elements, more than the %d allowed", l.method, kind, size, l.maxElements))
	}
	return nil
}

// limitedProtocol is a TProtocol whose container reads are capped by limit.
type limitedProtocol struct {
	thrift.TProtocol
	limit *replyLimit
}

func (p *limitedProtocol) ReadListBegin(ctx context.Context) (thrift.TType, int, error) {
	t, size, err := p.TProtocol.ReadListBegin(ctx)
	if err == nil {
		err = p.limit.checkContainer("list", size)
	}
	return t, size, err
}

func (p *limitedProtocol) ReadSetBegin(ctx context.Context) (thrift.TType, int, error) {
	t, size, err := p.TProtocol.ReadSetBegin(ctx)
	if err == nil {
		err = p.limit.checkContainer("set", size)
	}
	return t, size, err
}

func (p *limitedProtocol) ReadMapBegin(ctx context.Context) (thrift.TType, thrift.TType, int, error) {
	kt, vt, size, err := p.TProtocol.ReadMapBegin(ctx)
	if err == nil {
		err = p.limit.checkContainer("map", size)
	}
	return kt, vt, size, err
}

// Skip goes through this protocol, so that skipped fields are capped as well
// (the embedded protocol's Skip would read them through itself).
func (p *limitedProtocol) Skip(ctx context.Context, fieldType thrift.TType) error {
	return thrift.SkipDefaultDepth(ctx, p, fieldType)
}

// eventElements is the container cap of a reply to a request for n events.
func eventElements(n int) int {
	if n <= 0 {
		return maxListingElements
	}
	return min(max(2*n, minEventElements), maxListingElements)
}

// callLimit bounds the reply of one call.
type callLimit struct {
	method      string
	maxElements int
	maxBytes    int64
}
