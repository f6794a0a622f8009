package sasl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// scripted is a mechanism whose responses are given in advance.
type scripted struct {
	initial    []byte
	responses  [][]byte // one per challenge; the last is final
	challenges [][]byte // what the server sent
}

func (m *scripted) Name() string           { return "TEST" }
func (m *scripted) Start() ([]byte, error) { return m.initial, nil }
func (m *scripted) Layer() Layer           { return nil }
func (m *scripted) Step(c []byte) ([]byte, bool, error) {
	m.challenges = append(m.challenges, append([]byte{}, c...))
	i := len(m.challenges) - 1
	if i >= len(m.responses) {
		return nil, false, errors.New("unexpected challenge")
	}
	return m.responses[i], i == len(m.responses)-1, nil
}

// serve runs script as the server on one end of a loopback TCP connection
// and returns the client's end.
func serve(t *testing.T, script func(c net.Conn)) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		script(c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close(); <-done })
	return c
}

func frame(st status, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	b[0] = byte(st)
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

func readFrameT(t *testing.T, r io.Reader) (status, []byte) {
	t.Helper()
	st, p, err := readNegotiation(r, 1<<20)
	if err != nil {
		t.Errorf("server reading a frame: %v", err)
	}
	return st, p
}

func TestNegotiationThenDataFrames(t *testing.T) {
	type seen struct {
		frames []string
		data   []byte
	}
	got := make(chan seen, 1)
	c := serve(t, func(c net.Conn) {
		var s seen
		for range 3 { // START, initial response, final response
			st, p := readFrameT(t, c)
			s.frames = append(s.frames, st.String()+":"+string(p))
			if st == statusOK {
				c.Write(frame(statusOK, []byte("challenge-1")))
			}
		}
		c.Write(frame(statusComplete, nil))
		// One data frame from the client, answered by two.
		var hdr [4]byte
		io.ReadFull(c, hdr[:])
		s.data = make([]byte, binary.BigEndian.Uint32(hdr[:]))
		io.ReadFull(c, s.data)
		c.Write([]byte{0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 2, 'd', 'e'})
		got <- s
	})
	mech := &scripted{initial: []byte("hello"), responses: [][]byte{[]byte("final")}}
	tr := NewTransport(c, Limits{})
	if err := tr.Negotiate(mech); err != nil {
		t.Fatalf("Negotiate: %v", err)
	}
	if len(mech.challenges) != 1 || string(mech.challenges[0]) != "challenge-1" {
		t.Errorf("mechanism saw challenges %q, want [challenge-1]", mech.challenges)
	}
	tr.Write([]byte("req"))
	tr.Write([]byte("uest"))
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(io.LimitReader(tr, 5))
	if err != nil || string(reply) != "abcde" {
		t.Errorf("read %q, %v; want the two frames' bytes \"abcde\"", reply, err)
	}
	s := <-got
	want := []string{"START:TEST", "OK:hello", "COMPLETE:final"}
	if strings.Join(s.frames, " ") != strings.Join(want, " ") {
		t.Errorf("server saw frames %q, want %q", s.frames, want)
	}
	if string(s.data) != "request" {
		t.Errorf("server got data frame %q, want the two writes in one frame \"request\"", s.data)
	}
}

func negotiateAgainst(t *testing.T, reply []byte) error {
	t.Helper()
	c := serve(t, func(c net.Conn) {
		readFrameT(t, c)
		readFrameT(t, c)
		c.Write(reply)
	})
	return NewTransport(c, Limits{}).Negotiate(&scripted{initial: []byte("x"), responses: [][]byte{nil}})
}

func TestServerRefusalIsReportedWithItsText(t *testing.T) {
	for _, st := range []status{statusBad, statusError} {
		err := negotiateAgainst(t, frame(st, []byte("GSS initiate failed")))
		var se *ServerError
		if !errors.As(err, &se) || se.Status != st.String() || se.Message != "GSS initiate failed" {
			t.Errorf("%s frame: got %v, want a ServerError with the status and the text", st, err)
		}
	}
}

func TestHostileServerMessageIsShortenedAndPrintable(t *testing.T) {
	msg := append(bytes.Repeat([]byte("A"), 10000), 0xff, 0xfe)
	err := negotiateAgainst(t, frame(statusError, msg))
	var se *ServerError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a ServerError", err)
	}
	if len(se.Message) > maxServerMessage+3 || !strings.HasPrefix(se.Message, "AAAA") {
		t.Errorf("message of %d bytes kept, want at most %d", len(se.Message), maxServerMessage)
	}
}

func TestNotSASLReplyShowsItsFirstBytes(t *testing.T) {
	// A plain Thrift reply: a strict binary message header.
	err := negotiateAgainst(t, []byte{0x80, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 'a', 'b', 'c'})
	var ns *NotSASLError
	if !errors.As(err, &ns) || !bytes.Equal(ns.Head, []byte{0x80, 0x01, 0x00, 0x02, 0x00}) {
		t.Errorf("got %v, want a NotSASLError with the reply's first 5 bytes", err)
	}
}

func TestServerClosingDuringNegotiation(t *testing.T) {
	c := serve(t, func(c net.Conn) { readFrameT(t, c) })
	err := NewTransport(c, Limits{}).Negotiate(&scripted{initial: []byte("x"), responses: [][]byte{nil}})
	if !errors.Is(err, ErrPeerClosed) {
		t.Errorf("got %v, want ErrPeerClosed", err)
	}
}

// allocatedDuring reports the bytes allocated while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestOversizedNegotiationFrameIsRefusedWithoutAllocating(t *testing.T) {
	var err error
	alloc := allocatedDuring(func() {
		err = negotiateAgainst(t, []byte{byte(statusOK), 0xff, 0xff, 0xff, 0xff})
	})
	var tl *FrameTooLargeError
	if !errors.As(err, &tl) || tl.Size != 0xffffffff || tl.Kind != "negotiation" {
		t.Errorf("got %v, want a FrameTooLargeError for 4294967295 bytes", err)
	}
	if alloc > 4<<20 {
		t.Errorf("refusing a 4 GiB frame allocated %d bytes, want under 4 MiB", alloc)
	}
	// A huge refusal is still a refusal.
	err = negotiateAgainst(t, []byte{byte(statusError), 0x7f, 0xff, 0xff, 0xff})
	var se *ServerError
	if !errors.As(err, &se) || se.Status != "ERROR" {
		t.Errorf("huge ERROR frame: got %v, want a ServerError", err)
	}
}

func TestTruncatedNegotiationFrame(t *testing.T) {
	err := negotiateAgainst(t, []byte{byte(statusOK), 0, 0, 0, 100, 'a', 'b'})
	if err == nil || !strings.Contains(err.Error(), "100-byte payload") {
		t.Errorf("got %v, want an error naming the 100-byte payload cut short", err)
	}
}

func TestServerCompletingEarly(t *testing.T) {
	err := negotiateAgainst(t, frame(statusComplete, nil))
	if err == nil || !strings.Contains(err.Error(), "COMPLETE before") {
		t.Errorf("got %v, want an error about COMPLETE before the exchange was done", err)
	}
}

// negotiated returns a transport past a one-step negotiation whose server
// then sends data.
func negotiated(t *testing.T, limits Limits, data []byte) *Transport {
	t.Helper()
	c := serve(t, func(c net.Conn) {
		readFrameT(t, c)
		readFrameT(t, c)
		c.Write(frame(statusComplete, []byte("done")))
		c.Write(data)
	})
	tr := NewTransport(c, limits)
	if err := tr.Negotiate(&scripted{initial: []byte("x"), responses: [][]byte{nil}}); err != nil {
		t.Fatalf("Negotiate: %v", err)
	}
	return tr
}

func TestOversizedDataFrameIsRefused(t *testing.T) {
	tr := negotiated(t, Limits{Data: 1 << 20}, []byte{0x10, 0, 0, 0, 'x'})
	var err error
	alloc := allocatedDuring(func() { _, err = tr.Read(make([]byte, 10)) })
	var tl *FrameTooLargeError
	if !errors.As(err, &tl) || tl.Kind != "data" || tl.Size != 0x10000000 || tl.Limit != 1<<20 {
		t.Errorf("got %v, want a FrameTooLargeError for a 256 MiB data frame over 1 MiB", err)
	}
	if alloc > 4<<20 {
		t.Errorf("refusing the frame allocated %d bytes", alloc)
	}
}

func TestDataFrameCutShort(t *testing.T) {
	tr := negotiated(t, Limits{}, []byte{0, 0, 0, 10, 'a', 'b'})
	b, err := io.ReadAll(tr)
	if string(b) != "ab" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read %q, %v; want \"ab\" and an unexpected EOF", b, err)
	}
}

func TestReadGrowingHoldsOnlyWhatArrived(t *testing.T) {
	// A frame announcing 512 MiB that delivers 10 bytes must not cost 512 MiB.
	var err error
	alloc := allocatedDuring(func() { _, err = readGrowing(bytes.NewReader([]byte("0123456789")), 512<<20) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("got %v, want an unexpected EOF", err)
	}
	if alloc > 1<<20 {
		t.Errorf("allocated %d bytes for 10 that arrived", alloc)
	}
	b, err := readGrowing(bytes.NewReader(bytes.Repeat([]byte{7}, 300<<10)), 300<<10)
	if err != nil || len(b) != 300<<10 || b[len(b)-1] != 7 {
		t.Errorf("reading 300 KiB: %d bytes, %v", len(b), err)
	}
}
