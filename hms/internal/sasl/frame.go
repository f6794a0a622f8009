package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// negotiationHeader is the size of a negotiation frame's header: the status
// byte and the payload's length, big-endian.
const negotiationHeader = 5

// maxServerMessage bounds how much of a BAD or ERROR payload goes into an error.
const maxServerMessage = 512

// writeNegotiation writes one negotiation frame in a single Write.
func writeNegotiation(w io.Writer, st status, payload []byte) error {
	buf := make([]byte, negotiationHeader+len(payload))
	buf[0] = byte(st)
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(payload)))
	copy(buf[negotiationHeader:], payload)
	if _, err := w.Write(buf); err != nil {
		if isReset(err) {
			return fmt.Errorf("sending the SASL %s frame: %w (%v)", st, ErrPeerClosed, err)
		}
		return fmt.Errorf("sending the SASL %s frame: %w", st, err)
	}
	return nil
}

// readNegotiation reads one negotiation frame of at most limit payload bytes.
// BAD and ERROR frames become a *ServerError; anything that is not a frame a
// *NotSASLError; a close before the first byte ErrPeerClosed.
func readNegotiation(r io.Reader, limit uint32) (status, []byte, error) {
	var hdr [negotiationHeader]byte
	n, err := io.ReadFull(r, hdr[:])
	if err != nil {
		if n == 0 && (errors.Is(err, io.EOF) || isReset(err)) {
			return 0, nil, ErrPeerClosed
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, &NotSASLError{Head: append([]byte(nil), hdr[:n]...)}
		}
		return 0, nil, fmt.Errorf("reading a SASL negotiation frame: %w", err)
	}
	st := status(hdr[0])
	if !st.valid() {
		return 0, nil, &NotSASLError{Head: append([]byte(nil), hdr[:]...)}
	}
	size := binary.BigEndian.Uint32(hdr[1:5])
	if size > limit {
		if st == statusBad || st == statusError {
			// Still say that the server refused, without reading the text.
			return 0, nil, &ServerError{Status: st.String(), Message: fmt.Sprintf("(a message of %d bytes, not read)", size)}
		}
		return 0, nil, &FrameTooLargeError{Kind: "negotiation", Size: size, Limit: limit}
	}
	payload := make([]byte, size)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, fmt.Errorf("reading the %d-byte payload of a SASL %s frame: %w", size, st, err)
	}
	if st == statusBad || st == statusError {
		return 0, nil, &ServerError{Status: st.String(), Message: printable(payload, maxServerMessage)}
	}
	return st, payload, nil
}
