package sasl

import (
	"errors"
	"syscall"
)

// isReset reports a connection the peer reset: with an unread START frame in
// its buffer, a closing server resets rather than ends the connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
