package sasl

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/jcmturner/gokrb5/v8/messages"
)

// ErrPeerClosed is returned when the server closes the connection during the
// negotiation without a word: what a Thrift server that does not speak SASL
// does with a START frame it cannot parse.
var ErrPeerClosed = errors.New("the server closed the connection during the SASL negotiation")

// ServerError is a BAD or ERROR frame: the server refused or failed the
// negotiation and said why.
type ServerError struct {
	Status  string // BAD or ERROR
	Message string // the server's text, shortened and made printable
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("the server ended the SASL negotiation with %s: %q", e.Status, e.Message)
}

// NotSASLError is a reply that is not a negotiation frame. Head holds its first
// bytes, so a caller can tell what the server speaks instead.
type NotSASLError struct {
	Head []byte
}

func (e *NotSASLError) Error() string {
	return fmt.Sprintf("the server's reply is not a SASL negotiation frame (it starts % x)", e.Head)
}

// FrameTooLargeError is a frame whose announced length exceeds the bound.
type FrameTooLargeError struct {
	Kind  string // "negotiation" or "data"
	Size  uint32
	Limit uint32
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("the server announced a SASL %s frame of %d bytes, more than the bound of %d: refusing it", e.Kind, e.Size, e.Limit)
}

// printable shortens a server's message to at most max bytes of valid UTF-8, so
// that a hostile payload cannot flood a log line.
func printable(b []byte, max int) string {
	if len(b) > max {
		b = b[:max]
	}
	s := string(b)
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // replaces invalid bytes with U+FFFD
	}
	return s
}

// TicketError is a failure to get a service ticket for the server's principal
// from the KDC (unknown principal, KDC unreachable, expired credentials…).
type TicketError struct {
	Principal string
	Err       error
}

func (e *TicketError) Error() string {
	return fmt.Sprintf("getting a service ticket for %s: %v", e.Principal, e.Err)
}

func (e *TicketError) Unwrap() error { return e.Err }

// AcceptorError is a KRB-ERROR from the server in place of an AP-REP: it could
// not accept the ticket (clock skew, a key it does not have…).
type AcceptorError struct {
	Principal string
	KRBError  messages.KRBError
}

func (e *AcceptorError) Error() string {
	return fmt.Sprintf("the server (%s) rejected the ticket: %s", e.Principal, e.KRBError.Error())
}
