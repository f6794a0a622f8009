package agent

import (
	"container/heap"
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
)

// The waiter registry of GET /v1/wait (wait.go): per catalog, a board that the
// sync loop and the etcd watches tell every move of the figures a waiter waits
// on, and that wakes exactly the waiters whose target the move reached. A move
// that reaches no target costs the loop one comparison with the lowest target
// (a heap), so thousands of waiters neither poll nor slow the sync.

// waiter is one request waiting for a queue's progress to reach target in lineage
// epoch. reread: the target could not be read in a lineage yet (the metastore's
// log was behind the committed cursor: a new lineage is coming), so the request
// reads it again once the queue reaches lineage epoch.
type waiter struct {
	target, epoch int64
	reread        bool
	woke          chan struct{} // closed when the waiter is woken
	// where is the queue's list that holds the waiter; index its heap
	// position (byTarget only).
	where waiterPlace
	index int
}

type waiterPlace int

const (
	nowhere  waiterPlace = iota
	byTarget             // waiting in the queue's lineage for a value
	forEpoch             // waiting for the queue's lineage to change
)

// verdict is what a waiter's check found.
type verdict int

const (
	keepWaiting verdict = iota
	caughtUp
	rereadTarget // the queue moved into a newer lineage than the target's
)

// waitQueue is one figure that waiters wait on (this member's cursor, the
// committed master cursor, or the slowest live member's cursor) and the waiters
// on it. The board's mutex guards it.
type waitQueue struct {
	value, epoch int64
	known        bool
	targets      waiterHeap // waiters of the queue's lineage, lowest target first
	epochs       []*waiter  // waiters of another lineage (or before the first value)
}

// check says what w's target means against the queue now.
func (q *waitQueue) check(w *waiter) verdict {
	switch {
	case !q.known:
		return keepWaiting
	case w.reread:
		if q.epoch >= w.epoch {
			return rereadTarget
		}
		return keepWaiting
	case q.epoch > w.epoch:
		return rereadTarget
	case q.epoch < w.epoch:
		return keepWaiting
	case q.value >= w.target:
		return caughtUp
	}
	return keepWaiting
}

// add queues w (keepWaiting) where the next relevant move finds it.
func (q *waitQueue) add(w *waiter) {
	w.woke = make(chan struct{})
	if q.known && !w.reread && q.epoch == w.epoch {
		w.where = byTarget
		heap.Push(&q.targets, w)
		return
	}
	w.where = forEpoch
	q.epochs = append(q.epochs, w)
}

// remove takes w out of the queue (its request ended).
func (q *waitQueue) remove(w *waiter) {
	switch w.where {
	case byTarget:
		heap.Remove(&q.targets, w.index)
	case forEpoch:
		for i, x := range q.epochs {
			if x == w {
				q.epochs = append(q.epochs[:i], q.epochs[i+1:]...)
				break
			}
		}
	}
	w.where = nowhere
}

// set moves the queue to value in lineage epoch and wakes the waiters the move
// concerns: every waiter when the lineage changed (or the first value arrived),
// else those whose target the value reached. It returns how many it woke.
func (q *waitQueue) set(value, epoch int64) int {
	if q.known && q.epoch == epoch {
		q.value = value
		n := 0
		for q.targets.Len() > 0 && q.targets[0].target <= value {
			w := heap.Pop(&q.targets).(*waiter)
			w.where = nowhere
			close(w.woke)
			n++
		}
		return n
	}
	q.value, q.epoch, q.known = value, epoch, true
	n := 0
	for _, w := range q.targets {
		w.where = nowhere
		close(w.woke)
		n++
	}
	for _, w := range q.epochs {
		w.where = nowhere
		close(w.woke)
		n++
	}
	q.targets, q.epochs = nil, nil
	return n
}

// forget makes the queue unknown (its source stopped) and wakes every waiter,
// which then waits for the next value.
func (q *waitQueue) forget() int {
	n := 0
	for _, w := range append(q.targets, q.epochs...) {
		w.where = nowhere
		close(w.woke)
		n++
	}
	q.targets, q.epochs, q.known = nil, nil, false
	return n
}

// waiterHeap orders waiters by target (container/heap).
type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].target < h[j].target }
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiterHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return w
}

// waitScope is the scope parameter of /v1/wait.
type waitScope string

const (
	scopeMember  waitScope = "member"
	scopeCluster waitScope = "cluster"
)

// waitBoard is one catalog's waiters and the figures they wait on:
//
//   - member scope: this member's own cursor in its lineage with a local-scope
//     dialect; the committed master cursor with a cluster-scope dialect (the FE
//     replicates what the master applied).
//   - cluster scope: with a local-scope dialect, the lowest cursor among the
//     live members in the committed lineage (this member's own, and every other
//     member whose status key is alive, by its durable cursor); with a
//     cluster-scope dialect the same as member scope.
//
// The other members' cursors are followed by an etcd watch (MemberWatcher)
// opened only while a cluster-scope waiter exists, so that nobody waiting costs
// etcd nothing.
type waitBoard struct {
	self        string
	replicated  bool // cluster-scope dialect
	openMembers func(ctx context.Context) cursorstore.Watch[map[string]cursorstore.MemberProgress]

	mu      sync.Mutex
	member  waitQueue
	cluster waitQueue
	// The inputs of the cluster figure.
	own, ownEpoch int64
	ownKnown      bool
	committed     cursorstore.Cursor
	committedSeen bool
	others        map[string]cursorstore.MemberProgress // live members but this one
	othersSeen    bool
	// The members watch, running while clusterWaiters > 0; gen tells its
	// values from those of a watch closed before.
	clusterWaiters int
	gen            int
	stopMembers    context.CancelFunc
	membersFresh   func() error
	// unfiltered is set once the metastore answered a database-filtered read
	// with the whole log (Hive 3): requests naming a database then wait for
	// the whole log's target without reading events first.
	unfiltered atomic.Bool
	// wakes counts the waiters woken (tests: no move wakes a waiter it does not
	// concern).
	wakes int
}

func newWaitBoard(self, catalog string, scope applier.Scope, store CursorStore) *waitBoard {
	b := &waitBoard{self: self, replicated: scope == applier.ScopeCluster, own: -1}
	if mw, ok := store.(MemberWatcher); ok {
		b.openMembers = func(ctx context.Context) cursorstore.Watch[map[string]cursorstore.MemberProgress] {
			return mw.WatchMembers(ctx, catalog)
		}
	}
	return b
}

// queue is the figure scope waits on.
func (b *waitBoard) queue(scope waitScope) *waitQueue {
	if scope == scopeCluster && !b.replicated {
		return &b.cluster
	}
	return &b.member
}

// ownMoved is told every move of this member's cursor (memberCursor).
func (b *waitBoard) ownMoved(v, epoch int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.own, b.ownEpoch, b.ownKnown = v, epoch, true
	if !b.replicated {
		b.wakes += b.member.set(v, epoch)
	}
	b.updateCluster()
}

// masterSeen is told every committed master cursor the watch delivers.
func (b *waitBoard) masterSeen(c cursorstore.Cursor) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.committed, b.committedSeen = c, true
	if b.replicated {
		b.wakes += b.member.set(cursorValue(c), c.Epoch)
	}
	b.updateCluster()
}

// membersSeen takes the newest state of the members watch of generation gen.
func (b *waitBoard) membersSeen(gen int, all map[string]cursorstore.MemberProgress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.gen {
		return // a value of a closed watch: it may name other members than now
	}
	b.others = map[string]cursorstore.MemberProgress{}
	for m, p := range all {
		if p.Live && m != b.self {
			b.others[m] = p
		}
	}
	b.othersSeen = true
	b.updateCluster()
}

// updateCluster recomputes the cluster figure (mu held): the lowest cursor of the
// live members in the committed lineage, a member of another lineage or without
// a cursor counting as -1.
func (b *waitBoard) updateCluster() {
	if b.replicated || b.clusterWaiters == 0 || !b.committedSeen || !b.ownKnown || !b.othersSeen {
		return
	}
	epoch := b.committed.Epoch
	low := b.own
	if b.ownEpoch != epoch {
		low = -1
	}
	for _, p := range b.others {
		v := p.Value
		if !p.HasCursor || p.Epoch != epoch {
			v = -1
		}
		low = min(low, v)
	}
	b.wakes += b.cluster.set(low, epoch)
}

// joinCluster records a cluster-scope waiter; the first one opens the members
// watch. It reports false when this member cannot follow the others.
func (b *waitBoard) joinCluster() bool {
	if b.replicated {
		return true
	}
	if b.openMembers == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clusterWaiters++
	if b.clusterWaiters > 1 {
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.gen++
	gen := b.gen
	b.stopMembers = cancel
	wt := b.openMembers(ctx)
	b.membersFresh = wt.Fresh
	go func() {
		for all := range wt.C {
			b.membersSeen(gen, all)
		}
	}()
	return true
}

// leaveCluster undoes joinCluster; the last waiter closes the watch and the
// cluster figure is unknown until the next one opens it again.
func (b *waitBoard) leaveCluster() {
	if b.replicated {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clusterWaiters--
	if b.clusterWaiters > 0 {
		return
	}
	b.stopMembers()
	b.gen++
	b.stopMembers, b.membersFresh = nil, nil
	b.others, b.othersSeen = nil, false
	b.wakes += b.cluster.forget()
}

// enqueue checks w against scope's figure; unless that settles it, w is queued
// and woke is closed at the next move that concerns it. applied is the
// figure's value (-1 unknown).
func (b *waitBoard) enqueue(scope waitScope, w *waiter) (v verdict, applied int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue(scope)
	applied = -1
	if q.known {
		applied = q.value
	}
	if v = q.check(w); v != keepWaiting {
		return v, applied
	}
	q.add(w)
	return keepWaiting, applied
}

// dequeue takes w out of scope's queue if it is still there.
func (b *waitBoard) dequeue(scope waitScope, w *waiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue(scope).remove(w)
}

// progress is scope's figure now: its value and lineage, and whether it is known.
func (b *waitBoard) progress(scope waitScope) (value, epoch int64, known bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue(scope)
	return q.value, q.epoch, q.known
}

// membersNotFresh says why the members watch cannot be trusted (nil: it can).
func (b *waitBoard) membersNotFresh() error {
	b.mu.Lock()
	fresh, seen := b.membersFresh, b.othersSeen
	b.mu.Unlock()
	if fresh == nil {
		return fmt.Errorf("the members' cursors are not followed")
	}
	if err := fresh(); err != nil {
		return err
	}
	if !seen {
		return fmt.Errorf("the members' cursors have not been read from etcd yet")
	}
	return nil
}

// behind describes what scope's figure waits on for target in lineage epoch, for
// a timeout's reason: this member, the committed cursor, or each live member
// still below target.
func (b *waitBoard) behind(scope waitScope, target, epoch int64) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	describe := func(name string, has bool, v, e int64) string {
		switch {
		case !has:
			return fmt.Sprintf("member %s has no durable cursor", name)
		case e != epoch:
			return fmt.Sprintf("member %s at %d in epoch %d (committed epoch %d)", name, v, e, epoch)
		case v < 0:
			return fmt.Sprintf("member %s due for a full refresh", name)
		}
		return fmt.Sprintf("member %s at %d", name, v)
	}
	if b.replicated {
		c := b.committed
		if !b.committedSeen {
			return []string{"committed master cursor not read from etcd yet"}
		}
		if !c.Exists {
			return []string{"no master has committed a cursor yet"}
		}
		return []string{fmt.Sprintf("master cursor at %d (epoch %d)", c.Value, c.Epoch)}
	}
	var out []string
	if !b.ownKnown || b.ownEpoch != epoch || b.own < target {
		out = append(out, describe(b.self, b.ownKnown, b.own, b.ownEpoch))
	}
	if scope == scopeCluster {
		if !b.othersSeen {
			out = append(out, "the other members' cursors not read from etcd yet")
		}
		names := make([]string, 0, len(b.others))
		for m := range b.others {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			p := b.others[m]
			if !p.HasCursor || p.Epoch != epoch || p.Value < target {
				out = append(out, describe(m, p.HasCursor, p.Value, p.Epoch))
			}
		}
	}
	return out
}
