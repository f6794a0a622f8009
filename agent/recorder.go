package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms"
)

// recorder is where one catalog's loop reports what happened: the steps tell it
// outcomes (a fetch, a batch applied, a full refresh, a failure of a class), and
// it keeps the catalog's metrics and what /status shows. It is the only writer of
// both, so that a step reads as what it does, not as what it counts.
type recorder struct {
	m       *metrics
	catalog string
	// board is told the cursor moves that waiters of /v1/wait wait on.
	board *waitBoard

	cursor, masterCursor, hmsCurrent, lagEvents, lagSeconds prometheus.Gauge
	paused, pushdownDBs, healLoopsGauge                     prometheus.Gauge
	fetchSeconds, decodeSeconds, commitSeconds              prometheus.Observer

	mu sync.Mutex
	st catalogState
}

// catalogState is what /status shows about one catalog.
type catalogState struct {
	own, master, hmsCurrent int64
	hmsCurrentAt            time.Time // when hmsCurrent was read
	caughtUpAt              time.Time
	// hmsErr is the last failed read of the metastore (the current id, a
	// fetch) while they keep failing, since hmsFailingSince; cleared by the
	// next read that succeeds.
	hmsErr                  string
	hmsFailingSince         time.Time
	lagEvents               int64
	lastErr                 string
	lastErrAt               time.Time
	failing                 bool      // the last step failed
	failingSince            time.Time // when the steps began to fail (failing)
	authFailing             bool
	configFailing           bool // the FE answered as no configured FE should
	hmsConfigFailing        bool // the last step failed on a metastore configuration error (hms.ConfigError)
	fullRefreshes, selfHeal int
	// heals are the last maxHealsShown heals, oldest first; healLoops the
	// objects healed more than max_per_hour times in the hour before
	// healLoopsAt.
	heals         []healRecord
	healLoops     []string
	healLoopsAt   time.Time
	lastAppliedAt time.Time
	// epoch is own's lineage, masterEpoch the committed one (-1 unknown).
	epoch, masterEpoch int64
	// feApplied is what the FE last reported as applied (AppliedReporter
	// only; feAppliedUnknown: never asked).
	feApplied int64
	// paused: the loop, as master, found the pause key at the top of a cycle
	// and has not started a step since. The pause watch seeing the key is not
	// enough to say that the master stopped: a cycle already running still
	// reads the metastore, applies and commits.
	paused bool
}

// feAppliedUnknown is catalogState.feApplied before the FE was asked.
const feAppliedUnknown = -2

func newRecorder(m *metrics, catalog string) *recorder {
	r := &recorder{
		m: m, catalog: catalog,
		cursor:         m.cursor.WithLabelValues(catalog),
		masterCursor:   m.masterCursor.WithLabelValues(catalog),
		hmsCurrent:     m.hmsCurrent.WithLabelValues(catalog),
		lagEvents:      m.lagEvents.WithLabelValues(catalog),
		lagSeconds:     m.lagSeconds.WithLabelValues(catalog),
		paused:         m.catalogPaused.WithLabelValues(catalog),
		pushdownDBs:    m.pushdownDBs.WithLabelValues(catalog),
		healLoopsGauge: m.selfHealLoops.WithLabelValues(catalog),
		fetchSeconds:   m.fetchSeconds.WithLabelValues(catalog),
		decodeSeconds:  m.decodeSeconds.WithLabelValues(catalog),
		commitSeconds:  m.commitSeconds.WithLabelValues(catalog),
		st:             catalogState{own: -1, master: -1, hmsCurrent: -1, masterEpoch: -1, feApplied: feAppliedUnknown},
	}
	r.cursor.Set(-1)
	m.feStatements.WithLabelValues(catalog, "ok") // the series exists before the first request
	r.pushdownDBs.Set(0)                          // until a fetch says otherwise
	r.masterCursor.Set(-1)
	r.paused.Set(0)
	r.healLoopsGauge.Set(0)
	m.txnUnknownCommits.WithLabelValues(catalog) // the series exist before the first commit
	m.txnOpen.WithLabelValues(catalog).Set(0)
	for _, s := range []healScope{healTable, healDatabase, healCatalog} {
		m.selfHeals.WithLabelValues(catalog, s.String()) // every scope's series exists from the start
	}
	return r
}

// snapshot is the catalog's state for /status.
func (r *recorder) snapshot() catalogState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// cursorMoved records this member's cursor and its lineage.
func (r *recorder) cursorMoved(v, epoch int64) {
	r.cursor.Set(float64(v))
	r.mu.Lock()
	r.st.own, r.st.epoch = v, epoch
	r.mu.Unlock()
	if r.board != nil {
		r.board.ownMoved(v, epoch)
	}
}

// masterCursorSeen records the committed cursor as the watch delivered it.
func (r *recorder) masterCursorSeen(c cursorstore.Cursor) {
	r.masterCursor.Set(float64(cursorValue(c)))
	if r.board != nil {
		r.board.masterSeen(c)
	}
}

// metastoreCurrent records the metastore's current id, as the master reads it.
func (r *recorder) metastoreCurrent(cur int64) {
	r.hmsCurrent.Set(float64(cur))
	r.mu.Lock()
	r.st.hmsCurrent, r.st.hmsCurrentAt = cur, time.Now()
	r.st.hmsErr, r.st.hmsFailingSince = "", time.Time{}
	r.mu.Unlock()
}

// metastoreRead records the outcome of a read of the metastore (err nil: it
// answered), for /status and the member status: `hmssync status` shows a
// member whose reads keep failing. A read cancelled by this member (its term
// ended, a read-ahead discarded, shutdown) says nothing about the metastore.
func (r *recorder) metastoreRead(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.st.hmsErr, r.st.hmsFailingSince = "", time.Time{}
		return
	}
	r.st.hmsErr = shorten(err.Error(), maxStatusError)
	if r.st.hmsFailingSince.IsZero() {
		r.st.hmsFailingSince = time.Now()
	}
}

// lag derives the lag from the newest id this member knows of: the metastore's
// current id for the master, the committed cursor m for followers.
func (r *recorder) lag(master bool, m cursorstore.Cursor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.master = cursorValue(m)
	if m.Exists {
		r.st.masterEpoch = m.Epoch
	}
	target := r.st.master
	if master && r.st.hmsCurrent >= 0 {
		target = r.st.hmsCurrent
	}
	lag := target - r.st.own
	if lag < 0 || target < 0 {
		lag = 0
	}
	if r.st.own < 0 {
		lag = target + 1
	}
	now := time.Now()
	if lag == 0 || r.st.caughtUpAt.IsZero() {
		r.st.caughtUpAt = now
	}
	r.st.lagEvents = lag
	r.lagEvents.Set(float64(lag))
	r.lagSeconds.Set(now.Sub(r.st.caughtUpAt).Seconds())
}

// holding records whether the loop holds for the pause key (see catalogState).
func (r *recorder) holding(p bool) {
	r.mu.Lock()
	was := r.st.paused
	r.st.paused = p
	r.mu.Unlock()
	if p != was {
		v := 0.0
		if p {
			v = 1
		}
		r.paused.Set(v)
	}
}

// readsWholeLog records that this member reads the whole log (a follower: push-
// down is the master's).
func (r *recorder) readsWholeLog() { r.pushdownDBs.Set(0) }

// fetched records a fetch that took took; f is its answer (err nil).
func (r *recorder) fetched(f hms.Fetch, took time.Duration, err error) {
	r.fetchSeconds.Observe(took.Seconds())
	r.metastoreRead(err)
	if err != nil {
		return
	}
	r.pushdownDBs.Set(float64(f.Databases))
	var received typeCounts
	for _, ev := range f.Events {
		received.add(eventTypeLabel(ev.Type), 1)
	}
	for _, c := range received {
		r.m.eventsReceived.WithLabelValues(r.catalog, c.typ).Add(float64(c.n))
	}
}

// decodedIn records a decode of one fetch.
func (r *recorder) decodedIn(took time.Duration) { r.decodeSeconds.Observe(took.Seconds()) }

// poisoned counts an event of type typ that could not be decoded.
func (r *recorder) poisoned(typ string) {
	r.m.eventsFailed.WithLabelValues(r.catalog, eventTypeLabel(typ)).Inc()
}

// eventsCovered counts a batch's events once it is applied (or covered by the
// master, for a follower of a cluster-scope dialect).
func (r *recorder) eventsCovered(d *decoded) {
	for _, c := range d.applied {
		r.m.eventsApplied.WithLabelValues(r.catalog, c.typ).Add(float64(c.n))
	}
	for _, c := range d.skipped {
		r.m.eventsSkipped.WithLabelValues(r.catalog, c.typ).Add(float64(c.n))
	}
}

// feRequest counts one request sent to the FE (a doris statement, a native
// batch) by its result label.
func (r *recorder) feRequest(result string) {
	r.m.feStatements.WithLabelValues(r.catalog, result).Inc()
}

// applyTook times one batch sent to the FE (kind: changes or full_refresh).
func (r *recorder) applyTook(kind string, took time.Duration) {
	r.m.applySeconds.WithLabelValues(r.catalog, kind).Observe(took.Seconds())
}

// applied records a batch the FE acknowledged up to to; reportsApplied says
// whether the FE reports its applied id (AppliedReporter), which is then to.
func (r *recorder) applied(to int64, reportsApplied bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reportsApplied {
		r.st.feApplied = to
	}
	r.st.lastAppliedAt = time.Now()
	r.st.authFailing = false
	r.st.configFailing = false
}

// feReported records the id the FE reported as applied.
func (r *recorder) feReported(fe int64) {
	r.mu.Lock()
	r.st.feApplied = fe
	r.mu.Unlock()
}

// fullRefreshed counts a full refresh this member applied to its FE.
func (r *recorder) fullRefreshed(reason string) {
	r.m.fullRefreshes.WithLabelValues(r.catalog, reason).Inc()
	r.mu.Lock()
	r.st.fullRefreshes++
	r.mu.Unlock()
}

// commitTook times one fenced commit.
func (r *recorder) commitTook(took time.Duration) { r.commitSeconds.Observe(took.Seconds()) }

// txnUnknownCommits counts commits the open-transaction state could not answer for.
func (r *recorder) txnUnknownCommits(n int) {
	r.m.txnUnknownCommits.WithLabelValues(r.catalog).Add(float64(n))
}

// txnsDropped counts open transactions dropped for a bound (reason).
func (r *recorder) txnsDropped(reason string, n int) {
	r.m.txnDropped.WithLabelValues(r.catalog, reason).Add(float64(n))
}

// txnsOpen sets how many open transactions the state holds.
func (r *recorder) txnsOpen(n int) { r.m.txnOpen.WithLabelValues(r.catalog).Set(float64(n)) }

// fenceRefused counts a fenced commit etcd refused, by reason.
func (r *recorder) fenceRefused(reason string) {
	r.m.fencedRejected.WithLabelValues(r.catalog, reason).Inc()
}

// maxHealsShown is how many of the last heals /status lists per catalog.
const maxHealsShown = 10

// healed counts a heal (of a table or a database once it reached the FE; of the
// catalog once decided) and keeps it for /status.
func (r *recorder) healed(h healRecord) {
	r.m.selfHeals.WithLabelValues(r.catalog, h.scope.String()).Inc()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.selfHeal++
	if len(r.st.heals) == maxHealsShown {
		r.st.heals = slices.Delete(slices.Clone(r.st.heals), 0, 1)
	}
	r.st.heals = append(r.st.heals, h)
}

// healLoops records the objects healed more than max_per_hour times in the hour
// before now.
func (r *recorder) healLoops(objs []change.Object, now time.Time) {
	r.healLoopsGauge.Set(float64(len(objs)))
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, objectName(o).String())
	}
	slices.Sort(names)
	r.mu.Lock()
	r.st.healLoops, r.st.healLoopsAt = names, now
	r.mu.Unlock()
}

// expireHealLoops clears the looping objects an hour after the last heal that
// reported them, when no heal since said so again.
func (r *recorder) expireHealLoops(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.st.healLoops) > 0 && now.Sub(r.st.healLoopsAt) > time.Hour {
		r.st.healLoops = nil
		r.healLoopsGauge.Set(0)
	}
}

// retried counts a failed step that is retried, by its class label.
func (r *recorder) retried(class string) {
	r.m.retries.WithLabelValues(r.catalog, class).Inc()
}

// maxStatusError bounds the last error kept for /status and the member status.
const maxStatusError = 2 << 10

// failed records a step's failure of class for /status.
func (r *recorder) failed(err error, class failureClass) {
	if class == classAuth {
		r.m.feAuthFailures.Inc()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Bounded: the text may carry what the metastore or the FE sent (an
	// exception's message), and it is published in the member's etcd status,
	// whose value etcd caps.
	r.st.lastErr = shorten(err.Error(), maxStatusError)
	r.st.lastErrAt = time.Now()
	if !r.st.failing {
		r.st.failingSince = r.st.lastErrAt
	}
	r.st.failing = true
	switch class {
	case classAuth:
		r.st.authFailing = true
	case classConfig:
		r.st.configFailing = true
	case classHMSConfig:
		r.st.hmsConfigFailing = true
	}
}

// stepSucceeded marks the loop as no longer failing; the last error stays in
// /status for the operator. The auth and configuration flags are cleared only
// by a successful apply (applied), since a step that applied nothing proves
// nothing about the credentials.
func (r *recorder) stepSucceeded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.failing = false
	r.st.hmsConfigFailing = false // the step reached the metastore
}
