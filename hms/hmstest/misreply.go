package hmstest

import (
	"context"
	"fmt"

	"github.com/apache/thrift/lib/go/thrift"
)

// The ways a Misreply fault can spoil a reply's message header. Each makes a
// client's Thrift library refuse the reply before reading its body, so a client
// that keeps the connection afterwards reads that body as its next reply.
const (
	MisreplyMethod   = "method"   // the reply names another method
	MisreplySequence = "sequence" // the reply carries the next sequence id
	MisreplyType     = "type"     // the reply is sent as a CALL message, not a REPLY
)

func checkMisreply(m string) error {
	switch m {
	case "", MisreplyMethod, MisreplySequence, MisreplyType:
		return nil
	}
	return fmt.Errorf("misreply %q: want %q, %q or %q", m, MisreplyMethod, MisreplySequence, MisreplyType)
}

// misreplyProtocol writes the processor's reply with its message header spoilt
// as how says; everything else passes through.
type misreplyProtocol struct {
	thrift.TProtocol
	how string
}

func (p misreplyProtocol) WriteMessageBegin(ctx context.Context, name string, typ thrift.TMessageType, seq int32) error {
	switch p.how {
	case MisreplyMethod:
		name += "_other"
	case MisreplySequence:
		seq++
	case MisreplyType:
		typ = thrift.CALL
	}
	return p.TProtocol.WriteMessageBegin(ctx, name, typ, seq)
}
