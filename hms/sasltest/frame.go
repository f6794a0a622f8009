package sasltest

import (
	"encoding/binary"
	"fmt"
	"io"
)

// maxFrame bounds what a test client may make the server read.
const maxFrame = 1 << 20

func writeFrame(w io.Writer, st byte, payload []byte) error {
	b := make([]byte, 5+len(payload))
	b[0] = st
	binary.BigEndian.PutUint32(b[1:5], uint32(len(payload)))
	copy(b[5:], payload)
	_, err := w.Write(b)
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("reading a negotiation frame: %w", err)
	}
	if hdr[0] < stStart || hdr[0] > stComplete {
		// What a plain Thrift client's first bytes get from a Java metastore.
		return 0, nil, &refusal{status: stError, msg: fmt.Sprintf("Invalid status %d", int8(hdr[0]))}
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("a negotiation frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, fmt.Errorf("reading a negotiation frame: %w", err)
	}
	return hdr[0], b, nil
}
