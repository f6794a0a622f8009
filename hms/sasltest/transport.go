package sasltest

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
)

// Transport is the server's side of the data frames after the negotiation: a
// thrift.TTransport whose frames are wrap tokens when the client chose
// integrity. Each Flush sends one frame, as the Java server does.
type Transport struct {
	ctx   *Context
	rw    io.ReadWriteCloser
	r     *bufio.Reader
	plain []byte
	wbuf  []byte
}

// Transport returns the data transport of an established context over rw.
func (c *Context) Transport(rw io.ReadWriteCloser) *Transport {
	return &Transport{ctx: c, rw: rw, r: bufio.NewReader(rw)}
}

func (t *Transport) Read(p []byte) (int, error) {
	for len(t.plain) == 0 {
		var hdr [4]byte
		if _, err := io.ReadFull(t.r, hdr[:]); err != nil {
			return 0, err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			return 0, fmt.Errorf("a data frame of %d bytes", n)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(t.r, b); err != nil {
			return 0, err
		}
		if t.ctx.Layer == LayerIntegrity {
			var err error
			if b, err = t.ctx.Unwrap(b); err != nil {
				return 0, err
			}
		}
		t.plain = b
	}
	n := copy(p, t.plain)
	t.plain = t.plain[n:]
	return n, nil
}

func (t *Transport) Write(p []byte) (int, error) {
	t.wbuf = append(t.wbuf, p...)
	return len(p), nil
}

// Flush sends what was written as one frame.
func (t *Transport) Flush(context.Context) error {
	if len(t.wbuf) == 0 {
		return nil
	}
	payload := t.wbuf
	t.wbuf = nil
	if t.ctx.Layer == LayerIntegrity {
		var err error
		if payload, err = t.ctx.Wrap(payload); err != nil {
			return err
		}
	}
	b := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	copy(b[4:], payload)
	_, err := t.rw.Write(b)
	return err
}

func (t *Transport) Open() error            { return nil }
func (t *Transport) IsOpen() bool           { return true }
func (t *Transport) Close() error           { return t.rw.Close() }
func (t *Transport) RemainingBytes() uint64 { return ^uint64(0) }
