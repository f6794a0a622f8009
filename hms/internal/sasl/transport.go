package sasl

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Limits bound what the server may make the transport read and hold.
type Limits struct {
	// Negotiation bounds a negotiation frame's payload (GSSAPI tokens from a
	// server are a few hundred bytes). Default 64 KiB.
	Negotiation uint32
	// Data bounds a data frame. Without a security layer a frame is streamed
	// and never held whole; with one it is held until its checksum is checked,
	// growing only as its bytes arrive. Default 1 GiB, the Thrift client's own
	// message bound.
	Data uint32
}

func (l Limits) withDefaults() Limits {
	if l.Negotiation == 0 {
		l.Negotiation = 64 << 10
	}
	if l.Data == 0 {
		l.Data = 1 << 30
	}
	return l
}

// Transport is a Thrift transport over a connection to a SASL server
// (TSaslClientTransport). Negotiate must succeed before Read and Write are used.
// Writes are held until Flush, which sends them as one data frame (several when
// a security layer bounds the frame size), as the Java transport does.
type Transport struct {
	rw     io.ReadWriteCloser
	r      *bufio.Reader
	limits Limits
	layer  Layer

	wbuf   []byte
	remain uint32 // bytes left in the current data frame (no security layer)
	plain  []byte // unread bytes of the current unwrapped frame (security layer)
}

// NewTransport returns a transport over rw; rw's deadlines are the caller's.
func NewTransport(rw io.ReadWriteCloser, limits Limits) *Transport {
	return &Transport{rw: rw, r: bufio.NewReaderSize(rw, 32<<10), limits: limits.withDefaults()}
}

// Negotiate runs the SASL exchange with mech: START with the mechanism's
// name, the initial response, then challenges and responses until both sides
// say COMPLETE. It leaves the transport ready for data frames.
func (t *Transport) Negotiate(mech Mechanism) error {
	if err := t.negotiate(mech); err != nil {
		return fmt.Errorf("SASL %s negotiation: %w", mech.Name(), err)
	}
	t.layer = mech.Layer()
	return nil
}

func (t *Transport) negotiate(mech Mechanism) error {
	initial, err := mech.Start()
	if err != nil {
		return err
	}
	if err := writeNegotiation(t.rw, statusStart, []byte(mech.Name())); err != nil {
		return err
	}
	if err := writeNegotiation(t.rw, statusOK, initial); err != nil {
		return err
	}
	done := false
	for {
		st, challenge, err := readNegotiation(t.r, t.limits.Negotiation)
		if err != nil {
			return err
		}
		if st == statusStart {
			return &NotSASLError{Head: []byte{byte(st)}}
		}
		if done {
			// Our last response went out; the server must now confirm.
			if st != statusComplete {
				return fmt.Errorf("the server answered the final response with %s, want COMPLETE", st)
			}
			return nil
		}
		if st == statusComplete && len(challenge) == 0 {
			return fmt.Errorf("the server said COMPLETE before the %s exchange was done", mech.Name())
		}
		resp, last, err := mech.Step(challenge)
		if err != nil {
			return err
		}
		if st == statusComplete {
			// The server is done and its final challenge is answered locally.
			if !last {
				return fmt.Errorf("the server said COMPLETE before the %s exchange was done", mech.Name())
			}
			return nil
		}
		next := statusOK
		if last {
			next, done = statusComplete, true
		}
		if err := writeNegotiation(t.rw, next, resp); err != nil {
			return err
		}
	}
}

// Read reads the bytes of the data frames.
func (t *Transport) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if t.layer != nil {
		for len(t.plain) == 0 {
			if err := t.readWrapped(); err != nil {
				return 0, err
			}
		}
		n := copy(p, t.plain)
		t.plain = t.plain[n:]
		return n, nil
	}
	for t.remain == 0 {
		size, err := t.readDataHeader()
		if err != nil {
			return 0, err
		}
		t.remain = size
	}
	if uint32(len(p)) > t.remain {
		p = p[:t.remain]
	}
	n, err := t.r.Read(p)
	t.remain -= uint32(n)
	if errors.Is(err, io.EOF) && t.remain > 0 {
		err = fmt.Errorf("the server closed the connection inside a SASL data frame: %w", io.ErrUnexpectedEOF)
	}
	return n, err
}

func (t *Transport) readDataHeader() (uint32, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(t.r, hdr[:]); err != nil {
		return 0, err
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > t.limits.Data {
		return 0, &FrameTooLargeError{Kind: "data", Size: size, Limit: t.limits.Data}
	}
	return size, nil
}

// readWrapped reads one wrapped frame and unwraps it into t.plain.
func (t *Transport) readWrapped() error {
	size, err := t.readDataHeader()
	if err != nil {
		return err
	}
	// Grow with the bytes that arrive, not with the length announced.
	buf, err := readGrowing(t.r, int(size))
	if err != nil {
		return fmt.Errorf("reading a %d-byte SASL data frame: %w", size, err)
	}
	plain, err := t.layer.Unwrap(buf)
	if err != nil {
		return fmt.Errorf("unwrapping a SASL data frame: %w", err)
	}
	t.plain = plain
	return nil
}

// readGrowing reads exactly n bytes, doubling its buffer as bytes arrive, so
// that it never holds more than twice what the server actually sent.
func readGrowing(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, 64<<10))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil && len(buf) < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// Write holds p until Flush.
func (t *Transport) Write(p []byte) (int, error) {
	t.wbuf = append(t.wbuf, p...)
	return len(p), nil
}

// Flush sends what was written as data frames.
func (t *Transport) Flush(context.Context) error {
	if len(t.wbuf) == 0 {
		return nil
	}
	data := t.wbuf
	t.wbuf = t.wbuf[:0]
	if t.layer == nil {
		return t.writeFrame(data)
	}
	for len(data) > 0 {
		n := len(data)
		if m := t.layer.MaxWrap(); m > 0 && n > m {
			n = m
		}
		tok, err := t.layer.Wrap(data[:n])
		if err != nil {
			return fmt.Errorf("wrapping a SASL data frame: %w", err)
		}
		if err := t.writeFrame(tok); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (t *Transport) writeFrame(payload []byte) error {
	buf := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	_, err := t.rw.Write(buf)
	return err
}

// Open is a no-op: the connection is open and Negotiate has run.
func (t *Transport) Open() error { return nil }

// IsOpen reports true; a broken connection shows in Read and Write.
func (t *Transport) IsOpen() bool { return true }

// Close closes the connection.
func (t *Transport) Close() error { return t.rw.Close() }

// RemainingBytes is unknown: a Thrift message may span frames.
func (t *Transport) RemainingBytes() uint64 { return ^uint64(0) }
