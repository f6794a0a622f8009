package eventlines

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// TailOptions say where `events tail` starts and how it polls.
type TailOptions struct {
	// From is the id after which events are printed; below 0, the current id
	// (only new events).
	From int64
	// Batch is the number of events per fetch; Poll the wait between polls
	// when caught up.
	Batch int
	Poll  time.Duration
	// Decode prints each event's descriptors (Decoder's) after it.
	Decode  bool
	Decoder message.Decoder
	// Compact prints one short line per event (WriteCompact) instead of its
	// JSON.
	Compact bool
}

// Tail prints the events of client's log to out as JSON lines until ctx ends
// (`hmssync events tail`); gaps, resets and failed fetches are reported to
// errOut, and it goes on after them.
func Tail(ctx context.Context, client *hms.Client, out, errOut io.Writer, o TailOptions) error {
	from, batch, poll, decode, dec := o.From, o.Batch, o.Poll, o.Decode, o.Decoder
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 30*time.Second) }
	cursor := from
	if cursor < 0 {
		cctx, cancel := call()
		cur, err := client.CurrentEventID(cctx)
		cancel()
		if err != nil {
			return err
		}
		cursor = cur
		fmt.Fprintf(errOut, "tailing events after %d\n", cursor)
	}
	w := bufio.NewWriter(out)
	for {
		cctx, cancel := call()
		f, err := client.NextEvents(cctx, cursor, batch, nil)
		cancel()
		switch {
		case ctx.Err() != nil:
			return w.Flush()
		case err != nil:
			fmt.Fprintf(errOut, "fetch after %d: %v (retrying)\n", cursor, err)
		default:
			switch f.Continuity {
			case hms.Gap:
				if len(f.Events) == 0 {
					// The cleaner emptied the log behind the cursor: nothing
					// to print, and asking again from there would report the
					// same gap on every poll.
					// (Current is set for an empty batch; Last covers a batch
					// whose events were all skipped.)
					next := max(f.Current, f.Last)
					fmt.Fprintf(errOut, "gap: every event after %d was cleaned; following from %d\n", cursor, next)
					cursor = next
					continue
				}
				fmt.Fprintf(errOut, "gap: events after %d were cleaned; next is %d\n", cursor, f.Events[0].ID)
			case hms.Reset:
				fmt.Fprintf(errOut, "reset: the metastore's current id %d is below %d; following from there\n", f.Current, cursor)
				cursor = f.Current
				continue
			}
			for _, ev := range f.Events {
				if err := writeEvent(w, ev, o.Compact); err != nil {
					return err
				}
				if decode {
					if err := writeDecoded(w, dec, ev); err != nil && !isDecodeError(err) {
						return err
					}
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			cursor = f.Last
			if len(f.Events) == batch {
				continue
			}
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return w.Flush()
		case <-t.C:
		}
	}
}

// writeEvent writes ev as a JSON line, or compact.
func writeEvent(w io.Writer, ev message.Event, compact bool) error {
	if compact {
		return WriteCompact(w, ev)
	}
	return writeLine(w, ev)
}

// WriteCompact writes ev as one short line: id, time (UTC), type, db.table
// ("-" for none) and the message's size, e.g.
// "48213 2026-12-04T21:14:31Z ADD_PARTITION sales.orders 1.2KiB".
func WriteCompact(w io.Writer, ev message.Event) error {
	obj := "-"
	switch {
	case ev.DB != "" && ev.Table != "":
		obj = ev.DB + "." + ev.Table
	case ev.DB != "":
		obj = ev.DB
	}
	_, err := fmt.Fprintf(w, "%d %s %s %s %s\n", ev.ID, time.Unix(int64(ev.Time), 0).UTC().Format(time.RFC3339), Printable(ev.Type), Printable(obj), size(len(ev.Message)))
	return err
}

// Printable is s as a terminal may show it: s itself when every rune is
// printable and no space, else quoted (Go syntax), so that a name the
// metastore sent cannot end the line, fake another or drive the terminal.
func Printable(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s) // an invalid byte ranges as U+FFFD, which is printable
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || r == ' ' {
			return strconv.Quote(s)
		}
	}
	return s
}

// size is a byte count as B, KiB or MiB with one decimal.
func size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
}
