package agent

import (
	"context"
	"math"

	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
)

// The read-ahead overlaps reading the log with applying it. While a member
// applies batch N and (the master) commits it, the fetch and decode of batch
// N+1 run in a goroutine; the next step takes the result in place of its own
// fetch and decode. Draining a backlog, the fetch and decode of one batch then
// cost no wall time beyond the apply and commit of the previous one.
//
// What the step does with the result is exactly what it does with a fetch of
// its own, in the same order: the checks it makes before fetching (pause,
// lineage, the metastore's current id and identity, the FE's applied id) come
// first, then a fetch error, a gap or a reset, then a decode error at the point
// it decodes. It is taken only when it is the very fetch the step would make:
//   - the same role and term (a role change discards it),
//   - from the member's cursor as it is now, within the same epochs (own and
//     committed: an epoch change discards it),
//   - with the same serverSkip, which decides both the skip list sent and
//     whether the master reads the included databases only (push-down; the
//     databases are fixed for the loop, pipeline.go fetch),
//   - asking for no more than the step would, and for a follower ending at or
//     below the master cursor the step acts on, so that a follower still never
//     reads past it,
//   - and not an answer with no event at all: the step would take that as
//     "nothing up to the current id", and the id it holds was read after the
//     read-ahead's fetch, so it asks again.
//
// A member gathering a backlog into one batch over several fetches (a master,
// and a follower of a local-scope dialect) also keeps the next fetch of the
// batch in flight while it decodes the current one: a read-ahead that only
// fetches, taken by the gathering loop under the same rules (gatherNext).
//
// Taken in two stages: the step takes the read-ahead as soon as its fetch is
// back (fetched), so that it can start the next fetch at once, and waits for
// the decode only when it needs the changes (takeDecoded). Against a real
// metastore, whose answer is most of a step's wall time, the connection then
// stays busy: the next fetch is in flight while this one is decoded, applied
// and committed, instead of starting only after the decode.
//
// Bounded: at most one batch ahead (one fetch of at most batch_size events,
// kept with what it decoded to), so a member holds at most two fetches: the one
// being decoded and the one in flight. A read-ahead not taken by the next step
// is cancelled and waited for, so it never outlives the step that could have
// used it (nor the loop); one that was taken is waited for before the step
// returns (settle).

// readAhead is one fetch and decode running ahead of the step that will use it.
type readAhead struct {
	// What it was started for.
	master        bool
	term          election.Token // zero for a follower
	ownEpoch      int64
	masterEpoch   int64 // the committed epoch when it started
	after         int64
	max           int
	serverSkip    bool
	bound         int64 // a follower's master cursor; events above it are dropped
	cancel        context.CancelFunc
	fetched       chan struct{} // closed once f and fetchErr are set
	done          chan struct{} // closed once the goroutine ended (decode included)
	f             hms.Fetch     // valid once fetched is closed
	fetchErr      error
	decoded       decoded
	decodeErr     error // a *poisonError, not yet counted
	decodedEvents bool  // f.Events were decoded into decoded (valid once done is closed)
}

// startReadAhead starts fetching (and, with decode, decoding) up to max events
// after after (a follower: none above bound), ending with parent or the term;
// committedEpoch is the committed epoch the starting step acted on. Without
// decode the step decodes what it takes, while the next fetch is in flight.
func (l *catalogLoop) startReadAhead(parent context.Context, term election.Term, master bool, committedEpoch, after int64, max int, serverSkip bool, bound int64, decode bool) {
	l.discardReadAhead()
	ctx, cancel := termContext(parent, term)
	ra := &readAhead{
		master: master, ownEpoch: l.ownEpoch, masterEpoch: committedEpoch,
		after: after, max: max, serverSkip: serverSkip, bound: bound, cancel: cancel,
		fetched: make(chan struct{}), done: make(chan struct{}),
	}
	if master {
		ra.term = term.Token
	}
	l.ahead = ra
	go func() {
		defer close(ra.done)
		ra.f, ra.fetchErr = l.fetch(ctx, after, max, serverSkip)
		if ra.fetchErr != nil || ra.f.Continuity != hms.Contiguous {
			close(ra.fetched)
			return
		}
		evs := ra.f.Events
		for len(evs) > 0 && evs[len(evs)-1].ID > bound {
			evs = evs[:len(evs)-1]
		}
		ra.f.Events = evs
		// What the step moves its cursor to is bounded by the last id
		// read: not past the events dropped here.
		ra.f.Last = min(ra.f.Last, bound)
		// From here on the goroutine only reads f: the step may take it.
		close(ra.fetched)
		if decode && len(evs) > 0 {
			ra.decodeErr = l.decodeUncounted(evs, &ra.decoded)
			ra.decodedEvents = true
		}
	}()
}

// takeReadAhead returns the read-ahead if it is the fetch the step is about to
// make (see the file comment), waiting for its fetch to be back (its decode may
// still run: takeDecoded waits for it; the step must settle a read-ahead it
// took before it returns); nil otherwise, after discarding any other.
// committedEpoch is the committed epoch the step acts on.
func (l *catalogLoop) takeReadAhead(ctx context.Context, master bool, term election.Token, committedEpoch, after int64, max int, serverSkip bool, bound int64) *readAhead {
	ra := l.ahead
	if ra == nil {
		return nil
	}
	l.ahead = nil
	if ra.master != master || (master && ra.term != term) || ra.ownEpoch != l.ownEpoch || ra.masterEpoch != committedEpoch ||
		ra.after != after || ra.max > max || ra.serverSkip != serverSkip || ra.bound > bound {
		ra.discard()
		return nil
	}
	select {
	case <-ra.fetched:
	case <-ctx.Done():
		ra.discard()
		return nil
	}
	if ra.fetchErr == nil && ra.f.Continuity == hms.Contiguous && len(ra.f.Events) == 0 && ra.f.Last <= after {
		ra.discard()
		return nil
	}
	return ra
}

// gatherNext reads the next fetch, after after, of a batch being gathered: the
// read-ahead that only fetched it, when it is the very fetch (takeReadAhead's
// rules), else a fetch of its own. ok is false when the fetch ends the batch (an
// error, a gap or a reset, nothing new): the next step reads it again and deals
// with it as it would with its own fetch.
func (l *catalogLoop) gatherNext(ctx context.Context, master bool, term election.Token, committedEpoch, after int64, max int, serverSkip bool, bound int64) (f hms.Fetch, ok bool) {
	var err error
	if ra := l.takeReadAhead(ctx, master, term, committedEpoch, after, max, serverSkip, bound); ra != nil {
		f, err = ra.f, ra.fetchErr
		ra.settle() // it only fetched
	} else {
		f, err = l.fetch(ctx, after, max, serverSkip)
	}
	return f, err == nil && f.Continuity == hms.Contiguous && f.Last > after
}

// settle waits for a taken read-ahead's goroutine to end (its decode, if any)
// and releases its context; nil does nothing. A step defers it on what it took,
// so that no decode runs on past the step.
func (ra *readAhead) settle() {
	if ra != nil {
		ra.discard()
	}
}

// dropEvents lets go of the fetched events once the step has decoded them
// (waiting for the goroutine first, which may still be decoding them), so that
// a batch gathered over several fetches holds no more than two fetches' events:
// its first fetch is not kept alive until the batch is applied. nil does
// nothing.
func (ra *readAhead) dropEvents() {
	if ra != nil {
		<-ra.done
		ra.f.Events = nil
	}
}

// takeDecoded waits for the read-ahead's decode and hands what it decoded to
// the step, as l.decode would have: the decode error is counted now, when the
// step meets it. ok is false when the read-ahead decoded nothing (started
// without decode, or no events): the step decodes f.Events itself. A nil
// read-ahead is not ok.
func (ra *readAhead) takeDecoded(l *catalogLoop, d *decoded) (ok bool, err error) {
	if ra == nil {
		return false, nil
	}
	<-ra.done
	if !ra.decodedEvents {
		return false, nil
	}
	return true, ra.decodedInto(l, d)
}

// decodedInto merges what the read-ahead decoded (done is closed) into d.
func (ra *readAhead) decodedInto(l *catalogLoop, d *decoded) error {
	if ra.decodeErr != nil {
		l.countPoison(ra.decodeErr)
		return ra.decodeErr
	}
	if d.changes == nil && d.applied == nil && d.skipped == nil {
		*d = ra.decoded // nothing to merge with: no copy
		return nil
	}
	d.changes = append(d.changes, ra.decoded.changes...)
	for _, c := range ra.decoded.applied {
		d.applied.add(c.typ, c.n)
	}
	for _, c := range ra.decoded.skipped {
		d.skipped.add(c.typ, c.n)
	}
	return nil
}

// discard cancels the read-ahead and waits for its goroutine to end.
func (ra *readAhead) discard() {
	ra.cancel()
	<-ra.done
}

// discardReadAhead drops the loop's read-ahead, if any.
func (l *catalogLoop) discardReadAhead() {
	if l.ahead != nil {
		l.ahead.discard()
		l.ahead = nil
	}
}

// dropReadAheadOfAnotherRole discards a read-ahead started in another role or
// term than the step about to run.
func (l *catalogLoop) dropReadAheadOfAnotherRole(term election.Term, master bool) {
	if ra := l.ahead; ra != nil && (ra.master != master || (master && ra.term != term.Token)) {
		l.discardReadAhead()
	}
}

// noBound is a master read-ahead's bound: the master reads up to the
// metastore's current id.
const noBound = math.MaxInt64
