package message

import (
	"fmt"
	"unicode/utf8"
)

// DecodeError is a message that could not be decoded. It names the event so that
// an operator can find it in the metastore's NOTIFICATION_LOG table.
type DecodeError struct {
	EventID   int64
	EventType string
	Reason    string // what was wrong, e.g. "message is not valid gzip"
	Err       error  // the underlying error, if any
}

// maxDecodeErrorText bounds an error's text: it quotes what the message holds
// (a format, a key), which may be megabytes, and it is logged and shown in
// /status.
const maxDecodeErrorText = 1 << 10

func (e *DecodeError) Error() string {
	s := fmt.Sprintf("event %d (%s): %s", e.EventID, e.EventType, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if len(s) > maxDecodeErrorText {
		cut := maxDecodeErrorText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + fmt.Sprintf("… (%d bytes in all)", len(s))
	}
	return s
}

func (e *DecodeError) Unwrap() error { return e.Err }
