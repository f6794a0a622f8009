package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
)

// catalogLoop synchronises one catalog. It runs in its own goroutine so that a slow
// or broken catalog never holds up the others. Its state is owned by that
// goroutine, each piece in a type of its own changed through its methods: the
// member's cursor, the commit base, the read-ahead; what other goroutines read
// (/status, metrics) goes through the recorder.
type catalogLoop struct {
	cat Catalog
	log *zap.Logger

	// The member's collaborators (from Config) and shared watches.
	member  string
	store   CursorStore
	elector Elector
	applier applier.Applier
	scope   applier.Scope
	retry   Retry
	pause   *pauseWatch

	rec *recorder
	// board holds the waiters of /v1/wait on this catalog (waiters.go).
	board *waitBoard
	// watch follows the committed master cursor.
	watch *masterCursorWatch
	// pushDBs are the databases the include patterns confine the catalog to,
	// asked of the metastore by name (push-down); nil: the whole log.
	pushDBs []string

	cursor memberCursor
	base   commitBase
	// txns are the open transactions as of the cursor (txnstate.go);
	// memberTxns is the state as etcd last held it with this member's
	// cursor ("" none).
	txns       txnState
	memberTxns string
	// lookbackDue: the state knows nothing as of the cursor, and is to be
	// rebuilt from the log before it ahead of the next batch (lookback.go).
	lookbackDue bool
	// heal holds the heals by object in progress and of the last hour.
	heal *healer
	// poll spaces the master's polls of an idle log.
	poll pollSchedule
	// ahead reads the next fetch while the current batch is decoded and
	// applied (prefetch.go).
	ahead *prefetcher
	// maxDecoders is how many goroutines decode a fetch when no other
	// fetch is in flight (decodeWorkers): GOMAXPROCS.
	maxDecoders int

	// stepStart is when the current step began or last completed an external
	// call (unix nanoseconds; 0 while waiting), for /livez (liveness.go).
	stepStart atomic.Int64
}

// outcome says what a step wants the loop to do next.
type outcome int

const (
	again      outcome = iota // step again at once (draining a backlog)
	idle                      // master caught up, the poll found nothing: wait (pollSchedule)
	drained                   // master caught up after applying what the poll found: look again soon
	waitMaster                // follower caught up with the master cursor: wait for it to move
	paused                    // the pause key is set: wait for its removal
)

// errLostLeadership ends a master step whose term ended under it.
var errLostLeadership = errors.New("mastership lost")

// errCursorChangedUnder ends a master step whose commit found the committed
// cursor changed by someone else during the step: an operator's cursor set or
// reset, which the next cycle takes up (syncCommitBase).
var errCursorChangedUnder = errors.New("the master cursor was changed in etcd during the step")

func newCatalogLoop(a *Agent, cat Catalog) *catalogLoop {
	log := a.log.With(zap.String("catalog", cat.Name))
	rec := newRecorder(a.m, cat.Name)
	l := &catalogLoop{
		cat: cat, log: log,
		member: a.cfg.Member, store: a.cfg.Store, elector: a.cfg.Elector, applier: a.cfg.Applier,
		scope: a.scope, retry: a.retry, pause: a.pause,
		rec:         rec,
		watch:       newMasterCursorWatch(a.cfg.Store, cat.Name, rec, log),
		poll:        newPollSchedule(cat.BusyPollInterval, cat.PollInterval),
		maxDecoders: runtime.GOMAXPROCS(0),
	}
	l.board = newWaitBoard(a.cfg.Member, cat.Name, a.scope, a.cfg.Store)
	rec.board = l.board
	l.cursor = newMemberCursor(l.cursorMoved)
	l.txns = newTxnState(defaultTxnLimits(cat.TxnTimeout))
	l.heal = newHealer(a.cfg.SelfHealMaxPerHour)
	l.ahead = newPrefetcher(l)
	if !cat.NoPushdown {
		l.pushDBs = pushdownDatabases(cat.Include)
	}
	if skipped := skippedTxnTypes(cat.SkipEventTypes); len(skipped) > 0 {
		log.Warn("skip_event_types skips transaction events: commits to transactional (ACID) tables are then refreshed late, by a full refresh, or not at all",
			zap.Strings("skipped", skipped), zap.String("fix", "remove OPEN_TXN, ALLOC_WRITE_ID_EVENT and COMMIT_TXN from skip_event_types"))
	}
	if len(l.pushDBs) > 0 {
		log.Info("the master asks the metastore for the events of the included databases only", zap.Strings("databases", l.pushDBs))
	}
	return l
}

// run is the catalog's loop: one step at a time in the current role, then a wait
// chosen by the step's outcome, until ctx ends.
func (l *catalogLoop) run(ctx context.Context) {
	defer l.ahead.discard()
	bo := newBackoff(l.retry)
	for ctx.Err() == nil {
		// Take every wake-up channel before looking at the state they signal,
		// so that no change between the look and the wait is missed.
		roleChanged := l.elector.Changed()
		cursorMoved := l.watch.changed()
		pauseChanged := l.pause.changed()
		term, master := l.elector.Current()

		began := time.Now()
		l.stepStart.Store(began.UnixNano())
		l.rec.holding(false)
		out, err := l.step(ctx, term, master)
		l.stepStart.Store(0)

		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait := l.failed(err, bo)
			if wait > 0 {
				waitAny(ctx, time.NewTimer(wait), roleChanged, nil)
			}
			continue
		}
		bo.Reset()
		l.rec.stepSucceeded()
		switch out {
		case again:
		case idle, drained:
			l.waitIdle(ctx, began.Add(l.poll.after(out == drained)), roleChanged, pauseChanged)
		case waitMaster:
			// Event-driven: no timer, the etcd watch wakes the follower.
			waitAny(ctx, nil, roleChanged, cursorMoved)
		case paused:
			l.rec.holding(true)
			l.holdPaused(ctx, roleChanged, pauseChanged)
		}
	}
}

// step runs one step in the current role.
func (l *catalogLoop) step(ctx context.Context, term election.Term, master bool) (out outcome, err error) {
	l.ahead.within(ctx)
	if master {
		l.ahead.keepOnlyFor(term.Token)
	} else {
		l.ahead.keepOnlyFor(election.Token{})
		// A follower reads the whole log (or nothing, with a cluster-scope
		// dialect): push-down is the master's, and a demoted master's last
		// fetch no longer says what this member does.
		l.rec.readsWholeLog()
	}
	defer func() {
		l.ahead.settle()
		// A read-ahead serves only the step right after the one that
		// started it, draining a backlog; after a failure the batch it
		// follows is done again.
		if err != nil || out != again {
			l.ahead.discard()
		}
	}()
	if !l.cursor.loaded {
		if err := l.loadOwn(ctx); err != nil {
			return 0, err
		}
	}
	if m, known := l.watch.latest(); known {
		l.noticeOperatorReset(m)
	}
	defer l.persistOwn(ctx)
	if master {
		return l.masterStep(ctx, term)
	}
	return l.followerStep(ctx)
}

// loadOwn reads this member's durable cursor, so that a restarted sidecar resumes
// where it stopped instead of refreshing the whole catalog.
func (l *catalogLoop) loadOwn(ctx context.Context) error {
	c, err := l.store.MemberCursor(ctx, l.member, l.cat.Name)
	if err != nil {
		return fmt.Errorf("read this member's cursor from etcd: %w", err)
	}
	if seeded, err := l.startFromSeed(ctx, c); err != nil || seeded {
		return err
	}
	if c.Exists && c.Value >= 0 {
		l.cursor.resume(c.Value, c.Epoch)
		l.takeTxns(c.Txns, c.Value, "this member's")
		l.memberTxns = c.Txns
		l.log.Info("resuming from this member's durable cursor", zap.Int64("cursor", c.Value), zap.Int64("epoch", c.Epoch))
	} else {
		l.cursor.startUnknown()
		l.log.Info("no durable cursor for this member: the first step full-refreshes")
	}
	return nil
}

// persistOwn writes own to etcd if it moved. A failure is retried after the next
// step; it never holds up applying. It also runs when the step ended because the
// sidecar is stopping, so that a restart resumes from here: the store's request
// timeout bounds it.
func (l *catalogLoop) persistOwn(ctx context.Context) {
	value, epoch, unsaved := l.cursor.unsaved()
	if !unsaved {
		return
	}
	ctx = context.WithoutCancel(ctx)
	txns := l.txnsToWrite(value, l.memberTxns)
	var err error
	if w, ok := l.store.(MemberTxnsWriter); ok {
		err = w.PutMemberCursorTxns(ctx, l.member, l.cat.Name, value, epoch, txns)
	} else {
		err = l.store.PutMemberCursor(ctx, l.member, l.cat.Name, value, epoch)
	}
	if err != nil {
		l.log.Warn("could not save this member's cursor to etcd; retrying after the next step", zap.Int64("cursor", value), zap.Int64("epoch", epoch), zap.Error(err))
		return
	}
	if _, ok := l.store.(MemberTxnsWriter); ok && txns != "" {
		l.memberTxns = txns
	}
	l.cursor.saved()
}

// noticeOperatorReset full-refreshes once for an operator's `cursor reset` (the
// committed cursor m set to -1), if m shows one this member has not acted on. It
// reports whether m is such a reset.
func (l *catalogLoop) noticeOperatorReset(m cursorstore.Cursor) bool {
	if !m.Exists || m.Value != -1 || !l.cursor.operatorReset(m.Rev) {
		return false
	}
	if !l.cursor.unknown() {
		l.log.Warn("master cursor reset by an operator: full refresh", zap.Int64("cursor", l.cursor.Value()))
		l.cursor.reset("operator")
	}
	return true
}

// cursorMoved passes a move of this member's cursor on to the figures derived
// from it.
func (l *catalogLoop) cursorMoved(v, epoch int64) {
	l.rec.cursorMoved(v, epoch)
	l.updateLag()
}

// updateLag derives the lag from the newest id this member knows of: the
// metastore's current id for the master, the master cursor for followers.
func (l *catalogLoop) updateLag() {
	_, master := l.elector.Current()
	m, _ := l.watch.latest()
	l.rec.lag(master, m)
}

// waitIdle waits until the next poll is due: the schedule's wait (pollSchedule)
// after the step that found the master caught up began, so that the metastore is
// read at that cadence however long that step took to apply what it found
// (waiting after it would add the step's duration to every event's latency). The master also wakes at once on a role or pause change, or when
// someone else moved the master cursor (an operator's set or reset); its own
// commits do not wake it.
func (l *catalogLoop) waitIdle(ctx context.Context, due time.Time, roleChanged, pauseChanged <-chan struct{}) {
	timer := time.NewTimer(time.Until(due))
	defer timer.Stop()
	for {
		moved := l.watch.changed()
		if m, ok := l.watch.latest(); ok && l.base.writtenSince(m) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-roleChanged:
			return
		case <-pauseChanged:
			return
		case <-moved:
		}
	}
}

// waitAny blocks until ctx ends, the timer fires (nil: no timer) or a or b is
// closed (a nil channel never is).
func waitAny(ctx context.Context, timer *time.Timer, a, b <-chan struct{}) {
	var tc <-chan time.Time
	if timer != nil {
		defer timer.Stop()
		tc = timer.C
	}
	select {
	case <-ctx.Done():
	case <-tc:
	case <-a:
	case <-b:
	}
}

// stuckFor reports how long the current step has gone without progress (0 when
// waiting).
func (l *catalogLoop) stuckFor(now time.Time) time.Duration {
	s := l.stepStart.Load()
	if s == 0 {
		return 0
	}
	return now.Sub(time.Unix(0, s))
}
