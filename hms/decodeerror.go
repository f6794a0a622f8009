package hms

import "fmt"

// DecodeError is a message that could not be decoded. It names the event so that
// an operator can find it in the metastore's NOTIFICATION_LOG table.
type DecodeError struct {
	EventID   int64
	EventType string
	Reason    string // what was wrong, e.g. "message is not valid gzip"
	Err       error  // the underlying error, if any
}

func (e *DecodeError) Error() string {
	s := fmt.Sprintf("event %d (%s): %s", e.EventID, e.EventType, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *DecodeError) Unwrap() error { return e.Err }
