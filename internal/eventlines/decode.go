package eventlines

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hmssync/hmssync/hms"
)

// Decode decodes NotificationEvent JSON lines from in and writes descriptor
// lines to out (`hmssync events decode`). It returns how many events failed; err is only for I/O errors.
func Decode(in io.Reader, out io.Writer, catalog string) (failed int, err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30) // messages of thousands of partitions are large
	w := bufio.NewWriter(out)
	dec := hms.NewDecoder(catalog)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var ev hms.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			failed++
			if err := writeLine(w, decodeFailure{EventID: ev.ID, Error: fmt.Sprintf("input line %d is not a NotificationEvent JSON object: %v", line, err)}); err != nil {
				return failed, err
			}
			continue
		}
		if err := writeDecoded(w, dec, ev); err != nil {
			if !isDecodeError(err) {
				return failed, err
			}
			failed++
		}
	}
	if err := sc.Err(); err != nil {
		return failed, fmt.Errorf("reading stdin: %w", err)
	}
	return failed, w.Flush()
}

// decodeFailure is the line printed for an event that does not decode.
type decodeFailure struct {
	EventID int64  `json:"event_id"`
	Error   string `json:"error"`
}

// writeDecoded writes ev's descriptors, or its error line; a decode failure is
// returned (after its line is written) so that callers can count it.
func writeDecoded(w io.Writer, dec hms.Decoder, ev hms.Event) error {
	descs, derr := dec.Decode(ev)
	if derr != nil {
		if err := writeLine(w, decodeFailure{EventID: ev.ID, Error: derr.Error()}); err != nil {
			return err
		}
		return derr
	}
	for _, d := range descs {
		if err := writeLine(w, d); err != nil {
			return err
		}
	}
	return nil
}

// isDecodeError tells a bad event (counted, and the output goes on) from an
// I/O error (which ends it).
func isDecodeError(err error) bool {
	var de *hms.DecodeError
	return errors.As(err, &de)
}

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
