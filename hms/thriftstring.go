package hms

import (
	"context"
	"fmt"
	"io"
	"unsafe"

	"github.com/apache/thrift/lib/go/thrift"
)

// directStringMax is the largest string read straight into a buffer of its
// announced size. A larger announced size may come from a corrupt stream, so it
// is read the library's way, which grows its buffer only as bytes arrive.
const directStringMax = 1 << 20

// binaryProtocol is thrift's strict binary protocol with a cheaper ReadString.
// The library reads every string of 64 bytes or more through a bytes.Buffer
// that starts small and doubles (io.CopyN), then copies it into a string: for a
// batch of a thousand messages of a few kilobytes that is two thirds of the
// bytes a draining sidecar allocates and a sixth of its CPU time. Here a
// string up to directStringMax is read once into a buffer of its exact size,
// which becomes the string without a copy.
type binaryProtocol struct {
	*thrift.TBinaryProtocol
	// trans is the transport the embedded protocol reads from (a buffered or
	// framed transport, which are rich transports the protocol uses as is), so
	// reading from it here keeps both in step.
	trans io.Reader
	// interned are the short strings read so far (see internMaxLen), and
	// scratch the buffer they are read into to look them up.
	interned map[string]string
	scratch  [internMaxLen]byte
}

// Every notification event carries a handful of short strings that repeat from
// event to event: its type, message format, catalog, database and table. Reading
// each into a new string would be five of the eleven allocations of an event
// read off the wire; a short string already seen is returned as the same string.
// Bounded: strings of at most internMaxLen bytes, at most internMaxEntries of
// them (the map starts over when full), about 100 KiB per connection.
const (
	internMaxLen     = 64
	internMaxEntries = 1024
)

func newBinaryProtocol(trans thrift.TTransport, cfg *thrift.TConfiguration) *binaryProtocol {
	return &binaryProtocol{TBinaryProtocol: thrift.NewTBinaryProtocolConf(trans, cfg), trans: trans}
}

// ReadString reads a length-prefixed string.
func (p *binaryProtocol) ReadString(ctx context.Context) (string, error) {
	size, err := p.ReadI32(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case size < 0:
		return "", thrift.NewTProtocolExceptionWithType(thrift.NEGATIVE_SIZE, fmt.Errorf("negative string length %d", size))
	case int64(size) > int64(thriftConfig.GetMaxMessageSize()):
		return "", thrift.NewTProtocolExceptionWithType(thrift.SIZE_LIMIT, fmt.Errorf("string length %d beyond the %d-byte message limit", size, thriftConfig.GetMaxMessageSize()))
	case size == 0:
		return "", nil
	case size > directStringMax:
		return p.readLargeString(size)
	case size <= internMaxLen:
		return p.readShortString(int(size))
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(p.trans, buf); err != nil {
		return "", thrift.NewTProtocolException(err)
	}
	// buf is not referenced anywhere else and never written again.
	return unsafe.String(&buf[0], len(buf)), nil
}

// readShortString reads a string of at most internMaxLen bytes, returning the
// string read before if it is the same.
func (p *binaryProtocol) readShortString(size int) (string, error) {
	buf := p.scratch[:size]
	if _, err := io.ReadFull(p.trans, buf); err != nil {
		return "", thrift.NewTProtocolException(err)
	}
	if s, ok := p.interned[string(buf)]; ok {
		return s, nil
	}
	s := string(buf)
	if p.interned == nil || len(p.interned) >= internMaxEntries {
		p.interned = make(map[string]string, 64)
	}
	p.interned[s] = s
	return s, nil
}

// readLargeString reads a string in chunks, so that a corrupt length costs no
// more memory than the bytes actually received.
func (p *binaryProtocol) readLargeString(size int32) (string, error) {
	buf := make([]byte, 0, directStringMax)
	for remaining := int(size); remaining > 0; {
		chunk := min(remaining, directStringMax)
		start := len(buf)
		buf = append(buf, make([]byte, chunk)...)
		if _, err := io.ReadFull(p.trans, buf[start:]); err != nil {
			return "", thrift.NewTProtocolException(err)
		}
		remaining -= chunk
	}
	return unsafe.String(&buf[0], len(buf)), nil
}
