package agent

import (
	"context"
	"math"

	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// The prefetcher overlaps reading the log with applying it: while a member
// decodes, applies and commits one batch, the next fetch is already in flight
// (a read-ahead), and the step that needs it takes it in place of a fetch of its
// own. Against a real metastore the fetch is most of a step's wall time, so the
// metastore's connection then stays busy.
//
// A read-ahead is taken only when it is the very fetch the step would make
// (fetchKey.serves): the same role, term and lineage, from the member's cursor
// as it is now, asking for no more and (a follower) ending no higher than the
// step would; and not an answer with no event at all, which the step would take
// as "nothing up to the current id" although that id was read after the fetch.
// Whatever the step does with a fetch it makes itself, it does with a taken one,
// in the same order. A read-ahead the next step does not take is cancelled and
// waited for, so none outlives the step that could have used it.
//
// Bounded: a member holds at most two fetches, the one being decoded and the one
// in flight. A read-ahead that decodes too (the next batch's first fetch) may
// chain the fetch after it once its own fetch is back, but only after the step
// that started it has decoded every fetch of its own batch (release).

// fetchKey says which fetch a read-ahead is.
type fetchKey struct {
	// term is the master's term (zero for a follower): a read-ahead of
	// another role or term is never taken.
	term election.Token
	// ownEpoch and masterEpoch are the lineages the step acted on: this
	// member's cursor's and the committed one's.
	ownEpoch, masterEpoch int64
	after                 int64
	max                   int
	// bound is a follower's master cursor: events above it are dropped and
	// the fetch's last id is capped at it (noBound for the master).
	bound int64
}

// noBound is a master fetch's bound: the master reads up to the metastore's
// current id.
const noBound = math.MaxInt64

// master says whether the fetch is a master's (which sends the skip list and,
// with push-down, the database filter to the metastore).
func (k fetchKey) master() bool { return k.term != election.Token{} }

// serves says whether a read-ahead started with key k may stand in for the fetch
// want: the same fetch, asking for no more than want, and ending no higher.
func (k fetchKey) serves(want fetchKey) bool {
	return k.term == want.term && k.ownEpoch == want.ownEpoch && k.masterEpoch == want.masterEpoch &&
		k.after == want.after && k.max <= want.max && k.bound <= want.bound
}

// logReader is what the prefetcher reads and decodes with: the catalog loop's
// fetch (bounded by the key) and its decode (a failure not yet counted: a
// read-ahead that is discarded must not count it).
type logReader interface {
	fetch(ctx context.Context, k fetchKey) (hms.Fetch, error)
	decode(evs []message.Event, d *decoded, inFlight bool) error
}

// prefetcher holds a catalog loop's read-ahead. It is used by the loop's
// goroutine only.
type prefetcher struct {
	r logReader
	// life is the catalog loop's context: a read-ahead outlives the step
	// that started it (and ends with the loop, or the master's term).
	life  context.Context
	ahead *readAhead // in flight for a later step; nil: none
	taken *readAhead // taken by the current step; settled when it ends
}

func newPrefetcher(r logReader) *prefetcher {
	return &prefetcher{r: r, life: context.Background()}
}

// within makes the read-aheads started from now on end with ctx, the catalog
// loop's context.
func (p *prefetcher) within(ctx context.Context) { p.life = ctx }

// fetched is the first fetch of a step's batch, made by the step or taken from
// a read-ahead (which may have decoded it already).
type fetched struct {
	hms.Fetch
	from *readAhead // nil: the step's own fetch
}

// next returns the fetch k: the read-ahead's when it serves k (the fetch it
// chained, if any, becomes the one in flight), otherwise a fetch made now.
func (p *prefetcher) next(ctx context.Context, k fetchKey) (*fetched, error) {
	if ra := p.take(ctx, k); ra != nil {
		p.taken = ra
		return &fetched{Fetch: ra.f, from: ra}, ra.fetchErr
	}
	f, err := p.r.fetch(ctx, k)
	return &fetched{Fetch: f}, err
}

// decode decodes the first fetch of a batch into d (waiting for the read-ahead's
// decode when it made one) and lets go of its events: a batch gathered over
// several fetches keeps only the changes, not the messages.
func (p *prefetcher) decode(f *fetched, d *decoded) error {
	var err error
	if ra := f.from; ra != nil && ra.decodesEvents() {
		err = ra.decodedInto(d)
	} else {
		err = p.r.decode(f.Events, d, p.inFlight())
	}
	f.Events = nil
	if f.from != nil {
		f.from.dropEvents()
	}
	return err
}

// nextOfBatch reads the further fetch k of a batch being gathered: the
// read-ahead that only fetched it, when it serves k, else a fetch of its own.
// ok is false when the fetch ends the batch (an error, a gap or a reset,
// nothing new): the next step reads it again and deals with it as with its own.
func (p *prefetcher) nextOfBatch(ctx context.Context, k fetchKey) (f hms.Fetch, ok bool) {
	var err error
	if ra := p.take(ctx, k); ra != nil {
		f, err = ra.f, ra.fetchErr
		ra.discard() // it only fetched: its goroutine has ended
	} else {
		f, err = p.r.fetch(ctx, k)
	}
	return f, err == nil && f.Continuity == hms.Contiguous && f.Last > k.after
}

// decodeMore decodes a further fetch of the batch into d.
func (p *prefetcher) decodeMore(evs []message.Event, d *decoded) error {
	return p.r.decode(evs, d, p.inFlight())
}

// readAhead starts the fetch k in the background (with decode, its decode too),
// ending with the loop or the term, in place of any read-ahead in flight, unless
// that one already serves k (a chained fetch the step adopted).
//
// plan.chainBelow > 0 chains the next fetch: once this one is back with its last id
// below chainBelow (more is known to follow), and once the starting step has
// released the prefetcher (the bound of two fetches), a fetch-only read-ahead of
// the fetch after it starts at once, so that the metastore is not left waiting
// while the step applies and commits and the next step reads the cursors and
// the current id.
func (p *prefetcher) readAhead(term election.Term, k fetchKey, plan aheadPlan) {
	if ra := p.ahead; ra != nil && ra.decode == plan.decode && ra.key.serves(k) {
		return
	}
	p.discard()
	p.ahead = p.start(p.life, term, k, plan)
}

// inFlight says whether a read-ahead is in flight: a decode then runs on one
// goroutine (decodeWorkers).
func (p *prefetcher) inFlight() bool { return p.ahead != nil }

// release tells the read-ahead in flight that the step decoded all it fetched:
// a chained fetch may start without the member holding more than two fetches.
func (p *prefetcher) release() {
	if p.ahead != nil {
		p.ahead.release()
	}
}

// settle waits for the read-ahead the ending step took (its decode, if any), so
// that no decode runs on past the step.
func (p *prefetcher) settle() {
	if p.taken != nil {
		p.taken.discard()
		p.taken = nil
	}
}

// discard drops the read-ahead in flight, if any.
func (p *prefetcher) discard() {
	if p.ahead != nil {
		p.ahead.discard()
		p.ahead = nil
	}
}

// keepOnlyFor discards a read-ahead started in another role or term than term
// (zero: a follower's step).
func (p *prefetcher) keepOnlyFor(term election.Token) {
	if p.ahead != nil && p.ahead.key.term != term {
		p.discard()
	}
}

// take returns the read-ahead if it serves k, once its fetch is back; nil
// otherwise, after discarding any other. The fetch it chained, if any, becomes
// the one in flight.
func (p *prefetcher) take(ctx context.Context, k fetchKey) *readAhead {
	ra := p.ahead
	if ra == nil {
		return nil
	}
	p.ahead = nil
	if !ra.key.serves(k) || !ra.awaitFetch(ctx) {
		ra.discard()
		return nil
	}
	if ra.fetchErr == nil && ra.f.Continuity == hms.Contiguous && len(ra.f.Events) == 0 && ra.f.Last <= k.after {
		ra.discard()
		return nil
	}
	// The step that started it has ended: nothing of it is held any more.
	ra.release()
	p.ahead = ra.adoptChained()
	return ra
}

// aheadPlan is what a read-ahead does beyond its fetch.
type aheadPlan struct {
	decode     bool
	chainBelow int64 // > 0: chain the next fetch (see prefetcher.readAhead)
}

// readAhead is one fetch (and maybe its decode) running ahead of the step that
// will use it. Its goroutine writes f and fetchErr before closing fetched, next
// before closing chained, and the decode's results before closing done; the
// loop's goroutine reads each only after the channel closed.
type readAhead struct {
	key      fetchKey
	decode   bool
	cancel   context.CancelFunc
	fetched  chan struct{}
	chained  chan struct{}
	done     chan struct{}
	released chan struct{} // closed by release
	// isReleased is the loop goroutine's own record that released is closed.
	isReleased bool

	f         hms.Fetch
	fetchErr  error
	next      *readAhead // the chained fetch; the loop's once taken
	decoded   decoded
	decodeErr error // not yet counted
	didDecode bool  // f.Events were decoded into decoded
}

// start runs a read-ahead of k under plan, ending with life or the term, and
// returns it; it does not touch the prefetcher's, so that a read-ahead's
// goroutine may chain the next.
func (p *prefetcher) start(life context.Context, term election.Term, k fetchKey, plan aheadPlan) *readAhead {
	ctx, cancel := termContext(life, term)
	ra := &readAhead{
		key: k, decode: plan.decode, cancel: cancel,
		fetched: make(chan struct{}), chained: make(chan struct{}), done: make(chan struct{}), released: make(chan struct{}),
	}
	go func() {
		defer close(ra.done)
		ra.f, ra.fetchErr = p.r.fetch(ctx, k)
		close(ra.fetched)
		if ra.fetchErr != nil || ra.f.Continuity != hms.Contiguous {
			close(ra.chained)
			return
		}
		// From here on the goroutine only reads f: the step may take it.
		if last := ra.f.Last; plan.chainBelow > 0 && last > k.after && last < plan.chainBelow {
			select {
			case <-ra.released:
				nk := k
				nk.after, nk.max = last, int(min(int64(k.max), k.bound-last))
				ra.next = p.start(life, term, nk, aheadPlan{})
			case <-ctx.Done():
			}
		}
		inFlight := ra.next != nil // ra.next is the step's once chained is closed
		close(ra.chained)
		if plan.decode && len(ra.f.Events) > 0 {
			ra.decodeErr = p.r.decode(ra.f.Events, &ra.decoded, inFlight)
			ra.didDecode = true
		}
	}()
	return ra
}

// awaitFetch waits for the read-ahead's fetch; false if ctx ended first.
func (ra *readAhead) awaitFetch(ctx context.Context) bool {
	select {
	case <-ra.fetched:
		return true
	case <-ctx.Done():
		return false
	}
}

// adoptChained hands over the fetch this read-ahead chained (nil: none).
func (ra *readAhead) adoptChained() *readAhead {
	<-ra.chained
	next := ra.next
	ra.next = nil
	return next
}

func (ra *readAhead) release() {
	if !ra.isReleased {
		ra.isReleased = true
		close(ra.released)
	}
}

// decodesEvents waits for the goroutine and says whether it decoded the events.
func (ra *readAhead) decodesEvents() bool {
	<-ra.done
	return ra.didDecode
}

// decodedInto merges what the read-ahead decoded (done is closed) into d.
func (ra *readAhead) decodedInto(d *decoded) error {
	if ra.decodeErr != nil {
		return ra.decodeErr
	}
	if d.changes == nil && d.applied == nil && d.skipped == nil && d.poisoned == nil && d.txns == nil {
		*d = ra.decoded // nothing to merge with: no copy
		return nil
	}
	for _, t := range ra.decoded.txns {
		t.at += len(d.changes) // its place among the merged changes
		d.txns = append(d.txns, t)
	}
	d.changes = append(d.changes, ra.decoded.changes...)
	d.poisoned = append(d.poisoned, ra.decoded.poisoned...)
	for _, c := range ra.decoded.applied {
		d.applied.add(c.typ, c.n)
	}
	for _, c := range ra.decoded.skipped {
		d.skipped.add(c.typ, c.n)
	}
	return nil
}

// dropEvents lets go of the fetched events once the step decoded them, after the
// goroutine (which may have been decoding them) ended.
func (ra *readAhead) dropEvents() {
	<-ra.done
	ra.f.Events = nil
}

// discard cancels the read-ahead, and the fetch it chained, and waits for their
// goroutines to end.
func (ra *readAhead) discard() {
	ra.cancel()
	<-ra.done
	if ra.next != nil {
		ra.next.discard()
		ra.next = nil
	}
}
