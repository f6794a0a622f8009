package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
)

// catalogLoop synchronises one catalog. It runs in its own goroutine so that a slow
// or broken catalog never holds up the others. Everything but the status fields is
// owned by that goroutine.
type catalogLoop struct {
	a   *Agent
	cat Catalog
	log *zap.Logger
	// watch follows the committed master cursor.
	watch *masterCursorWatch
	// pushDBs are the databases the include patterns confine the catalog to,
	// asked of the metastore by name (push-down); nil: the whole log.
	pushDBs []string

	// own is the id of the last event applied to this member's FE (-1: unknown,
	// the next step full-refreshes). ownLoaded says whether it was read from etcd.
	own       int64
	ownLoaded bool
	ownDirty  bool // own not yet written to etcd
	// ownEpoch is the lineage own belongs to (SPEC §2a): a member applies
	// from own only while the committed epoch is the same.
	ownEpoch int64
	// feSent is the to_event_id of the last batch this member applied to
	// its FE (its durable cursor after a restart; -1 none): an FE reporting
	// less lost what it was sent (checkFEApplied).
	feSent int64
	// refreshReason says why own is -1, for the full-refresh metric and log.
	refreshReason string
	// resetRev is the revision of the last operator reset (master cursor -1)
	// this loop acted on.
	resetRev int64

	// lastSeen is the master cursor as of the last read or commit: the base of
	// the next compare-and-set. Valid only while haveLastSeen. lastSeenTerm is
	// the term it was read or written in.
	lastSeen     cursorstore.Cursor
	haveLastSeen bool
	lastSeenTerm election.Token

	// poll spaces the master's polls of an idle log.
	poll pollSchedule
	// ahead is the next batch being fetched and decoded while the current
	// one is applied (readahead.go); nil when none runs.
	ahead *readAhead
	// maxDecoders is how many goroutines decode a fetch when no other
	// fetch is in flight (decodeWorkers): GOMAXPROCS.
	maxDecoders int

	// stepStart is when the current step began or last completed an external
	// call (unix nanoseconds; 0 while waiting), for /livez (liveness.go).
	stepStart atomic.Int64

	mu sync.Mutex
	st catalogState
}

// catalogState is what /status shows about one catalog.
type catalogState struct {
	own, master, hmsCurrent int64
	caughtUpAt              time.Time
	lagEvents               int64
	lastErr                 string
	lastErrAt               time.Time
	failing                 bool // the last step failed
	authFailing             bool
	configFailing           bool // the FE answered as no configured FE should
	hmsConfigFailing        bool // the last step failed on a metastore configuration error (hms.ConfigError)
	fullRefreshes, selfHeal int
	lastAppliedAt           time.Time
	// epoch is own's lineage, masterEpoch the committed one (-1 unknown).
	epoch, masterEpoch int64
	// feApplied is what the FE last reported as applied (AppliedReporter
	// only; -2: never asked).
	feApplied int64
	// paused: the loop, as master, found the pause key at the top of a cycle
	// and has not started a step since. The pause watch seeing the key is not
	// enough to say that the master stopped: a cycle already running still
	// reads the metastore, applies and commits.
	paused bool
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

func newCatalogLoop(a *Agent, cat Catalog) *catalogLoop {
	log := a.log.With(zap.String("catalog", cat.Name))
	l := &catalogLoop{
		a: a, cat: cat, log: log, own: -1, feSent: -1, refreshReason: "initial",
		watch:       newMasterCursorWatch(cat.Name, a.cfg.Store, a.m, log),
		poll:        newPollSchedule(cat.BusyPollInterval, cat.PollInterval),
		maxDecoders: runtime.GOMAXPROCS(0),
	}
	if !cat.NoPushdown {
		l.pushDBs = pushdownDatabases(cat.Include)
	}
	if len(l.pushDBs) > 0 {
		log.Info("the master asks the metastore for the events of the included databases only", zap.Strings("databases", l.pushDBs))
	}
	l.st = catalogState{own: -1, master: -1, hmsCurrent: -1, masterEpoch: -1, feApplied: feAppliedUnknown}
	a.m.cursor.WithLabelValues(cat.Name).Set(-1)
	a.m.feStatements.WithLabelValues(cat.Name, "ok") // the series exists before the first request
	a.m.pushdownDBs.WithLabelValues(cat.Name).Set(0) // until a fetch says otherwise
	a.m.masterCursor.WithLabelValues(cat.Name).Set(-1)
	a.m.catalogPaused.WithLabelValues(cat.Name).Set(0)
	return l
}

// run is the catalog's loop: one step at a time in the current role, then a wait
// chosen by the step's outcome, until ctx ends.
func (l *catalogLoop) run(ctx context.Context) {
	defer l.discardReadAhead()
	bo := newBackoff(l.a.retry)
	for ctx.Err() == nil {
		// Take every wake-up channel before looking at the state they signal,
		// so that no change between the look and the wait is missed.
		roleChanged := l.a.cfg.Elector.Changed()
		cursorMoved := l.watch.changed()
		pauseChanged := l.a.pause.changed()
		term, master := l.a.cfg.Elector.Current()

		began := time.Now()
		l.stepStart.Store(began.UnixNano())
		l.setPaused(false)
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
		l.clearErr()
		switch out {
		case again:
		case idle, drained:
			l.waitIdle(ctx, began.Add(l.poll.after(out == drained)), roleChanged, pauseChanged)
		case waitMaster:
			// Event-driven: no timer, the etcd watch wakes the follower.
			waitAny(ctx, nil, roleChanged, cursorMoved)
		case paused:
			l.setPaused(true)
			waitAny(ctx, l.pauseRecheck(), roleChanged, pauseChanged)
		}
	}
}

// step runs one step in the current role.
func (l *catalogLoop) step(ctx context.Context, term election.Term, master bool) (out outcome, err error) {
	l.dropReadAheadOfAnotherRole(term, master)
	if !master {
		// A follower reads the whole log (or nothing, with a cluster-scope
		// dialect): push-down is the master's, and a demoted master's last
		// fetch no longer says what this member does.
		l.a.m.pushdownDBs.WithLabelValues(l.cat.Name).Set(0)
	}
	defer func() {
		// A read-ahead serves only the step right after the one that
		// started it, draining a backlog; after a failure the batch it
		// follows is done again.
		if err != nil || out != again {
			l.discardReadAhead()
		}
	}()
	if !l.ownLoaded {
		if err := l.loadOwn(ctx); err != nil {
			return 0, err
		}
	}
	l.observeOperatorReset()
	defer l.persistOwn(ctx)
	if master {
		return l.masterStep(ctx, term)
	}
	return l.followerStep(ctx)
}

// loadOwn reads this member's durable cursor, so that a restarted sidecar resumes
// where it stopped instead of refreshing the whole catalog.
func (l *catalogLoop) loadOwn(ctx context.Context) error {
	c, err := l.a.cfg.Store.MemberCursor(ctx, l.a.cfg.Member, l.cat.Name)
	if err != nil {
		return fmt.Errorf("read this member's cursor from etcd: %w", err)
	}
	l.ownLoaded = true
	if c.Exists && c.Value >= 0 {
		l.own, l.ownEpoch, l.feSent = c.Value, c.Epoch, c.Value
		l.log.Info("resuming from this member's durable cursor", zap.Int64("cursor", c.Value), zap.Int64("epoch", c.Epoch))
	} else {
		l.own = -1
		l.refreshReason = "initial"
		l.log.Info("no durable cursor for this member: the first step full-refreshes")
	}
	l.setOwn(l.own)
	l.ownDirty = false
	return nil
}

// persistOwn writes own to etcd if it moved. A failure is retried after the next
// step; it never holds up applying. It also runs when the step ended because the
// sidecar is stopping, so that a restart resumes from here: the store's request
// timeout bounds it.
func (l *catalogLoop) persistOwn(ctx context.Context) {
	if !l.ownDirty {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if err := l.a.cfg.Store.PutMemberCursor(ctx, l.a.cfg.Member, l.cat.Name, l.own, l.ownEpoch); err != nil {
		l.log.Warn("could not save this member's cursor to etcd; retrying after the next step", zap.Int64("cursor", l.own), zap.Int64("epoch", l.ownEpoch), zap.Error(err))
		return
	}
	l.ownDirty = false
}

// observeOperatorReset notices an operator's `cursor reset` (the master cursor set
// to -1): every member full-refreshes once.
func (l *catalogLoop) observeOperatorReset() {
	if m, known := l.watch.latest(); known {
		l.noticeOperatorReset(m)
	}
}

// noticeOperatorReset full-refreshes once for the reset m shows, if it is one.
func (l *catalogLoop) noticeOperatorReset(m cursorstore.Cursor) {
	if !m.Exists || m.Value != -1 || m.Rev == l.resetRev {
		return
	}
	l.resetRev = m.Rev
	if l.own != -1 {
		l.log.Warn("master cursor reset by an operator: full refresh", zap.Int64("cursor", l.own))
		l.resetOwn("operator")
	}
}

// resetOwn sets own to -1 so that the next step full-refreshes.
func (l *catalogLoop) resetOwn(reason string) {
	l.refreshReason = reason
	l.setOwn(-1)
}

// setOwn moves this member's cursor and the figures derived from it.
func (l *catalogLoop) setOwn(v int64) {
	l.own = v
	l.ownDirty = true
	l.a.m.cursor.WithLabelValues(l.cat.Name).Set(float64(v))
	l.mu.Lock()
	l.st.own = v
	l.st.epoch = l.ownEpoch
	l.mu.Unlock()
	l.updateLag()
}

// setOwnIn moves this member's cursor into lineage epoch (after a full
// refresh, or adopting an operator's value).
func (l *catalogLoop) setOwnIn(v, epoch int64) {
	l.ownEpoch = epoch
	l.setOwn(v)
}

// setPaused records whether the loop holds for the pause key (see catalogState).
func (l *catalogLoop) setPaused(p bool) {
	l.mu.Lock()
	was := l.st.paused
	l.st.paused = p
	l.mu.Unlock()
	if p != was {
		v := 0.0
		if p {
			v = 1
		}
		l.a.m.catalogPaused.WithLabelValues(l.cat.Name).Set(v)
	}
}

// setHMSCurrent records the metastore's current id, as the master reads it.
func (l *catalogLoop) setHMSCurrent(cur int64) {
	l.a.m.hmsCurrent.WithLabelValues(l.cat.Name).Set(float64(cur))
	l.mu.Lock()
	l.st.hmsCurrent = cur
	l.mu.Unlock()
	l.updateLag()
}

// updateLag derives the lag from the newest id this member knows of: the
// metastore's current id for the master, the master cursor for followers.
func (l *catalogLoop) updateLag() {
	_, master := l.a.cfg.Elector.Current()
	m, _ := l.watch.latest()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.master = cursorValue(m)
	if m.Exists {
		l.st.masterEpoch = m.Epoch
	}
	target := l.st.master
	if master && l.st.hmsCurrent >= 0 {
		target = l.st.hmsCurrent
	}
	lag := target - l.st.own
	if lag < 0 || target < 0 {
		lag = 0
	}
	if l.st.own < 0 {
		lag = target + 1
	}
	now := time.Now()
	if lag == 0 || l.st.caughtUpAt.IsZero() {
		l.st.caughtUpAt = now
	}
	l.st.lagEvents = lag
	l.a.m.lagEvents.WithLabelValues(l.cat.Name).Set(float64(lag))
	l.a.m.lagSeconds.WithLabelValues(l.cat.Name).Set(now.Sub(l.st.caughtUpAt).Seconds())
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
		if m, ok := l.watch.latest(); ok && l.haveLastSeen && m.Rev > l.lastSeen.Rev {
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
