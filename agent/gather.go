package agent

import (
	"context"

	"github.com/hmssync/hmssync/election"
)

// A member behind a backlog gathers several fetches into one batch, so that what
// a batch costs besides its events (the cursor and pause reads, the metastore's
// current id, the FE's applied id, one FE request, the commit, the member's
// cursor) is paid once for all of them. Only the changes are kept between
// fetches, not the messages, so a member holds at most two fetches: the one
// being decoded and the next one, in flight. Anything unusual in a further fetch
// (an error, a gap, nothing new) ends the batch; the next step deals with it.
//
// With a cluster-scope dialect (Doris) the master gathers up to drainBatchEvents
// events: the FE then gets one REFRESH per table for all of them, and etcd one
// commit, and no follower waits on the commits in between. Otherwise (the
// native dialect's master, and every follower that applies) a batch covers
// localDrainFetches fetches: each commit releases the followers' own work, so
// they start on the backlog after a few fetches.

// drainBatchEvents is how many events the master of a cluster-scope dialect
// gathers into one batch while draining a backlog, in fetches of at most the
// batch size.
const drainBatchEvents = 10000

// localDrainFetches is how many fetches a member of a local-scope dialect
// gathers into one batch while draining a backlog. Against a real Hive 4.0.1
// metastore four fetches per batch drained about a quarter faster than one, and
// eight no faster than four (BENCHMARKS.md); each further fetch delays the
// followers' start by one more.
const localDrainFetches = 4

// batchPlan is what tells a master's batch from a follower's.
type batchPlan struct {
	// term is the master's term (zero for a follower): read-aheads end with it.
	term election.Term
	// key is the batch's first fetch; further fetches are the same fetch
	// from where the batch has reached. Its bound caps a follower's fetches
	// at the master cursor.
	key fetchKey
	// upTo is the highest id the batch is known to reach: the metastore's
	// current id (master) or the master cursor (follower).
	upTo int64
	// maxEvents > 0 gathers up to that many events (a cluster-scope master);
	// 0 up to localDrainFetches fetches.
	maxEvents int
	// chainBelow: the next batch's first fetch, read while this batch is
	// applied, chains the fetch after it when it ends below chainBelow
	// (0: never).
	chainBelow int64
	batchSize  int
}

// batch is what a step applies: the changes of one or more fetches, covering
// the events up to to.
type batch struct {
	decoded
	to int64
}

// gather decodes first and, draining a backlog, the further fetches of its
// batch, keeping the next fetch in flight while one is decoded: while the batch
// gathers, its next fetch (only fetched); once it is full and more follows, the
// next batch's first fetch (decoded too), read while this one is applied.
func (l *catalogLoop) gather(ctx context.Context, first *fetched, plan batchPlan) (batch, error) {
	g := &gathering{plan: plan, last: min(first.Last, plan.key.bound), n: len(first.Events) + first.Skipped, fetches: 1}
	if first.Last <= plan.key.after {
		// Nothing at all was read: no event between the cursor and upTo
		// exists any more in a log that still holds the cursor.
		g.last = plan.upTo
	}
	l.readOn(g)
	var b batch
	err := l.ahead.decode(first, &b.decoded)
	for err == nil && g.more() {
		f, ok := l.ahead.nextOfBatch(ctx, g.key(g.nextMax()))
		if !ok {
			break
		}
		g.add(len(f.Events)+f.Skipped, f.Last)
		l.readOn(g)
		err = l.ahead.decodeMore(f.Events, &b.decoded)
	}
	if err != nil {
		l.countPoison(err)
		return batch{}, err
	}
	if g.last < plan.upTo && !g.nextStarted {
		// The batch ended early and more is known to follow: read it while
		// this batch is applied.
		l.startNextBatch(g)
	}
	// Every fetch of this batch is decoded: the next batch's may chain.
	l.ahead.release()
	b.to = g.last
	return b, nil
}

// readOn keeps the next fetch in flight: the batch's next one while it
// gathers, else the next batch's first one.
func (l *catalogLoop) readOn(g *gathering) {
	switch {
	case g.more():
		l.ahead.readAhead(g.plan.term, g.key(g.nextMax()), aheadPlan{})
	case g.last < g.plan.upTo && !g.nextStarted:
		l.startNextBatch(g)
	}
}

// startNextBatch reads the next batch's first fetch, and decodes it, while this
// batch is applied (and committed).
func (l *catalogLoop) startNextBatch(g *gathering) {
	l.ahead.readAhead(g.plan.term, g.key(g.firstMax()), aheadPlan{decode: true, chainBelow: g.plan.chainBelow})
	g.nextStarted = true
}

// gathering is a batch being gathered: how far it reached, over how many events
// and fetches.
type gathering struct {
	plan        batchPlan
	last        int64
	n, fetches  int
	nextStarted bool
}

// more says whether the batch reads another fetch.
func (g *gathering) more() bool {
	switch {
	case g.last >= g.plan.upTo:
		return false
	case g.plan.maxEvents > 0:
		return g.n < g.plan.maxEvents
	default:
		return g.fetches < localDrainFetches
	}
}

// add takes a further fetch of n events (skipped ones included) up to last,
// capped at the plan's bound.
func (g *gathering) add(n int, last int64) {
	g.n += n
	g.fetches++
	g.last = min(last, g.plan.key.bound)
}

// key is the fetch of up to max events after the batch's last.
func (g *gathering) key(max int) fetchKey {
	k := g.plan.key
	k.after, k.max = g.last, max
	return k
}

// firstMax is how many events a batch's first fetch asks for: the batch size,
// and for a follower no more than the master cursor allows.
func (g *gathering) firstMax() int {
	m := g.plan.batchSize
	if g.plan.key.bound != noBound {
		m = int(min(int64(m), g.plan.key.bound-g.last))
	}
	return m
}

// nextMax is how many events the batch's next fetch asks for: no more than
// firstMax, nor than a cluster-scope master's batch has room for.
func (g *gathering) nextMax() int {
	m := g.firstMax()
	if g.plan.maxEvents > 0 {
		m = min(m, g.plan.maxEvents-g.n)
	}
	return m
}
