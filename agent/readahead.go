package agent

import (
	"context"
	"math"
	"sync"

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
// Chained across batches: the next batch's first fetch, once back, starts the
// fetch after it (startReadAhead's chainBelow), which the next step adopts for
// its gathering loop. Against a real metastore the connection would otherwise
// idle while the step applies and commits and the next step reads the cursors
// and the current id (15 to 20 ms a batch against Hive 4.0.1, BENCHMARKS.md).
//
// Bounded: at most one batch ahead (one fetch of at most batch_size events,
// kept with what it decoded to), so a member holds at most two fetches: the one
// being decoded and the one in flight. A chained fetch starts only once the
// step that started its parent has decoded every fetch of its own batch
// (release), so the two are the parent, being decoded, and the chained one. A
// read-ahead not taken by the next step is cancelled and waited for, with the
// fetch it chained, so it never outlives the step that could have used it (nor
// the loop); one that was taken is waited for before the step returns
// (settle).

// aheadKey says which fetch a read-ahead is (see the file comment for when a
// step may take it).
type aheadKey struct {
	master      bool
	term        election.Token // zero for a follower
	ownEpoch    int64
	masterEpoch int64 // the committed epoch the step acted on
	after       int64
	max         int
	serverSkip  bool
	bound       int64 // a follower's master cursor (noBound for the master); events above it are dropped
}

// masterKey is the key of a master's fetch of up to max events after after, in
// term, with the skip list sent (serverSkip), acting on the committed cursor
// last seen.
func (l *catalogLoop) masterKey(term election.Token, after int64, max int) aheadKey {
	return aheadKey{master: true, term: term, ownEpoch: l.ownEpoch, masterEpoch: l.lastSeen.Epoch,
		after: after, max: max, serverSkip: true, bound: noBound}
}

// followerKey is the key of a follower's fetch of up to max events after
// after, none above the master cursor bound in the committed epoch
// masterEpoch, without the skip list.
func (l *catalogLoop) followerKey(masterEpoch, after int64, max int, bound int64) aheadKey {
	return aheadKey{ownEpoch: l.ownEpoch, masterEpoch: masterEpoch, after: after, max: max, bound: bound}
}

// serves says whether a read-ahead started with key a is a fetch the step
// about to make the fetch k may take in its place: the same fetch, asking for
// no more than k, and ending no higher.
func (a aheadKey) serves(k aheadKey) bool {
	return a.master == k.master && (!a.master || a.term == k.term) && a.ownEpoch == k.ownEpoch && a.masterEpoch == k.masterEpoch &&
		a.after == k.after && a.max <= k.max && a.serverSkip == k.serverSkip && a.bound <= k.bound
}

// readAhead is one fetch and decode running ahead of the step that will use it.
type readAhead struct {
	key           aheadKey
	decode        bool
	cancel        context.CancelFunc
	fetched       chan struct{} // closed once f and fetchErr are set
	chained       chan struct{} // closed once next is set, or known not to be (after fetched)
	done          chan struct{} // closed once the goroutine ended (decode included; after chained)
	released      chan struct{} // closed by release: the starting step holds no fetch of its own any more
	releaseOnce   sync.Once
	f             hms.Fetch  // valid once fetched is closed
	fetchErr      error      // valid once fetched is closed
	next          *readAhead // the next fetch, chained (valid once chained is closed); owned by ra until taken
	decoded       decoded
	decodeErr     error // a *poisonError, not yet counted
	decodedEvents bool  // f.Events were decoded into decoded (valid once done is closed)
}

// startReadAhead starts the fetch k (and, with decode, its decode), ending with
// parent or the term, in place of any read-ahead the loop holds, unless that
// one already serves k (a chained fetch the step adopted, see chainBelow).
// Without decode the step decodes what it takes, while the next fetch is in
// flight.
//
// chainBelow > 0 chains the next fetch: once this one is back with its last id
// below chainBelow (more is known to follow), and once the starting step has
// decoded all it fetched (release: the bound of two fetches), a fetch-only
// read-ahead of the fetch after it starts at once, so that the metastore is
// not left waiting while the step applies and commits and the next step reads
// the cursors and the current id. The step that takes this read-ahead adopts
// it as the loop's read-ahead, for its gathering loop.
func (l *catalogLoop) startReadAhead(parent context.Context, term election.Term, k aheadKey, decode bool, chainBelow int64) {
	if ra := l.ahead; ra != nil && ra.decode == decode && ra.key.serves(k) {
		return
	}
	l.discardReadAhead()
	l.ahead = l.goReadAhead(parent, term, k, decode, chainBelow)
}

// goReadAhead starts a read-ahead (see startReadAhead) and returns it; it does
// not touch the loop's, so that a read-ahead's goroutine may chain the next.
func (l *catalogLoop) goReadAhead(parent context.Context, term election.Term, k aheadKey, decode bool, chainBelow int64) *readAhead {
	ctx, cancel := termContext(parent, term)
	ra := &readAhead{
		key: k, decode: decode, cancel: cancel,
		fetched: make(chan struct{}), chained: make(chan struct{}), done: make(chan struct{}), released: make(chan struct{}),
	}
	go func() {
		defer close(ra.done)
		ra.f, ra.fetchErr = l.fetch(ctx, k.after, k.max, k.serverSkip)
		if ra.fetchErr != nil || ra.f.Continuity != hms.Contiguous {
			close(ra.fetched)
			close(ra.chained)
			return
		}
		evs := belowBound(ra.f.Events, k.bound)
		ra.f.Events = evs
		// What the step moves its cursor to is bounded by the last id
		// read: not past the events dropped here.
		ra.f.Last = min(ra.f.Last, k.bound)
		// From here on the goroutine only reads f: the step may take it.
		close(ra.fetched)
		if last := ra.f.Last; chainBelow > 0 && last > k.after && last < chainBelow {
			select {
			case <-ra.released:
				nk := k
				nk.after, nk.max = last, int(min(int64(k.max), k.bound-last))
				ra.next = l.goReadAhead(parent, term, nk, false, 0)
			case <-ctx.Done():
			}
		}
		inFlight := ra.next != nil // ra.next is the step's once chained is closed
		close(ra.chained)
		if decode && len(evs) > 0 {
			ra.decodeErr = l.decodeUncounted(evs, &ra.decoded, inFlight)
			ra.decodedEvents = true
		}
	}()
	return ra
}

// release tells the read-ahead that the step that started it decoded all it
// fetched: a chained fetch may start without a member holding more than two
// fetches. nil does nothing.
func (ra *readAhead) release() {
	if ra != nil {
		ra.releaseOnce.Do(func() { close(ra.released) })
	}
}

// takeReadAhead returns the read-ahead if it serves the fetch k the step is
// about to make (see the file comment), waiting for its fetch to be back (its
// decode may still run: takeDecoded waits for it; the step must settle a
// read-ahead it took before it returns); nil otherwise, after discarding any
// other. The fetch it chained, if any, becomes the loop's read-ahead.
func (l *catalogLoop) takeReadAhead(ctx context.Context, k aheadKey) *readAhead {
	ra := l.ahead
	if ra == nil {
		return nil
	}
	l.ahead = nil
	if !ra.key.serves(k) {
		ra.discard()
		return nil
	}
	select {
	case <-ra.fetched:
	case <-ctx.Done():
		ra.discard()
		return nil
	}
	if ra.fetchErr == nil && ra.f.Continuity == hms.Contiguous && len(ra.f.Events) == 0 && ra.f.Last <= k.after {
		ra.discard()
		return nil
	}
	// The step that started it has ended: nothing of it is held any more.
	ra.release()
	<-ra.chained
	l.ahead, ra.next = ra.next, nil
	return ra
}

// gatherNext reads the next fetch k of a batch being gathered: the read-ahead
// that only fetched it, when it serves k, else a fetch of its own. ok is false
// when the fetch ends the batch (an error, a gap or a reset, nothing new): the
// next step reads it again and deals with it as it would with its own fetch.
func (l *catalogLoop) gatherNext(ctx context.Context, k aheadKey) (f hms.Fetch, ok bool) {
	var err error
	if ra := l.takeReadAhead(ctx, k); ra != nil {
		f, err = ra.f, ra.fetchErr
		ra.settle() // it only fetched
	} else {
		f, err = l.fetch(ctx, k.after, k.max, k.serverSkip)
	}
	return f, err == nil && f.Continuity == hms.Contiguous && f.Last > k.after
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

// discard cancels the read-ahead, and the fetch it chained, and waits for
// their goroutines to end.
func (ra *readAhead) discard() {
	ra.cancel()
	<-ra.done
	if ra.next != nil {
		ra.next.discard()
		ra.next = nil
	}
}

// releaseReadAhead releases the loop's read-ahead, if any (readAhead.release).
func (l *catalogLoop) releaseReadAhead() {
	l.ahead.release()
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
	if ra := l.ahead; ra != nil && (ra.key.master != master || (master && ra.key.term != term.Token)) {
		l.discardReadAhead()
	}
}

// noBound is a master read-ahead's bound: the master reads up to the
// metastore's current id.
const noBound = math.MaxInt64
