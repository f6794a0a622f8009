package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// GET /v1/wait: the read-your-writes barrier (SPEC §7, docs/read-your-writes.md).
// The request reads the metastore's current event id N once, and answers when
// the scope's figure (waiters.go) has reached N in the committed lineage: 200
// caught up, 504 at the timeout with what it waits on, 400 a bad parameter, 404 a
// catalog this sidecar does not serve, 429 too many waiters, 503 at once when the
// target cannot be read (metastore or etcd).

// Defaults of Config.WaitMaxTimeout and Config.MaxWaiters (http.wait_max_timeout
// and http.max_waiters), and the timeout of a request that names none.
const (
	DefaultWaitMaxTimeout = 10 * time.Minute
	DefaultMaxWaiters     = 1000
	defaultWaitTimeout    = 30 * time.Second
)

const (
	// waitGrace is what a waiting request's connection may take beyond its
	// timeout: reading the target and writing the answer.
	waitGrace = 30 * time.Second
	// waitCallTimeout bounds each metastore call of a request.
	waitCallTimeout = 10 * time.Second
	// waitMembersRead bounds how long a cluster-scope request waits for the
	// first read of the other members' cursors before answering 503.
	waitMembersRead = 5 * time.Second
	// waitNarrowLimit is the most events a request reads to find the newest
	// event of its database (or table) at or below N.
	waitNarrowLimit = 1000
	// maxWaitName bounds the db and table parameters.
	maxWaitName = 256
)

// waitLimits holds the agent-wide bounds and metrics of the waiters.
type waitLimits struct {
	maxTimeout time.Duration
	max        int64
	n          atomic.Int64
	requests   *prometheus.CounterVec
	duration   prometheus.Histogram
	waiters    prometheus.Gauge
}

func newWaitLimits(cfg Config, reg *prometheus.Registry) *waitLimits {
	w := &waitLimits{maxTimeout: cfg.WaitMaxTimeout, max: int64(cfg.MaxWaiters)}
	if w.maxTimeout <= 0 {
		w.maxTimeout = DefaultWaitMaxTimeout
	}
	if w.max <= 0 {
		w.max = DefaultMaxWaiters
	}
	w.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hmssync", Name: "wait_requests_total",
		Help: "Requests of /v1/wait by result: caught_up (200), timeout (504), error (400, 404, 503, or the client went away), rejected (429: http.max_waiters reached).",
	}, []string{"result"})
	w.duration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "hmssync", Name: "wait_duration_seconds",
		Help:    "How long requests of /v1/wait waited, whatever their result.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	})
	w.waiters = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "hmssync", Name: "waiters",
		Help: "Requests of /v1/wait in progress (at most http.max_waiters).",
	})
	for _, r := range []string{"caught_up", "timeout", "error", "rejected"} {
		w.requests.WithLabelValues(r)
	}
	reg.MustRegister(w.requests, w.duration, w.waiters)
	return w
}

// admit counts one more waiter, or reports false at the bound.
func (w *waitLimits) admit() bool {
	if w.n.Add(1) > w.max {
		w.n.Add(-1)
		return false
	}
	w.waiters.Inc()
	return true
}

func (w *waitLimits) leave() {
	w.n.Add(-1)
	w.waiters.Dec()
}

// waitParams are a request's parameters.
type waitParams struct {
	catalog, db, table string
	timeout            time.Duration
	scope              waitScope
}

// parseWait checks the query: every parameter known and given once, names
// bounded, the timeout a duration from 0 to max.
func parseWait(q url.Values, max time.Duration) (waitParams, error) {
	p := waitParams{timeout: defaultWaitTimeout, scope: scopeMember}
	for k, vs := range q {
		switch k {
		case "catalog", "db", "table", "timeout", "scope":
		default:
			return p, fmt.Errorf("unknown parameter %q: want catalog, db, table, timeout or scope", shorten(k, 64))
		}
		if len(vs) != 1 {
			return p, fmt.Errorf("parameter %s given %d times: give it once", k, len(vs))
		}
	}
	name := func(k string) (string, error) {
		v := q.Get(k)
		switch {
		case !q.Has(k):
			return "", nil
		case v == "":
			return "", fmt.Errorf("parameter %s is empty", k)
		case len(v) > maxWaitName:
			return "", fmt.Errorf("parameter %s is %d bytes long: at most %d", k, len(v), maxWaitName)
		case !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0:
			return "", fmt.Errorf("parameter %s %q: not a printable UTF-8 name", k, v)
		}
		return v, nil
	}
	var err error
	if p.catalog, err = name("catalog"); err != nil {
		return p, err
	}
	if p.catalog == "" {
		return p, errors.New("parameter catalog is missing: name the catalog to wait for")
	}
	if p.db, err = name("db"); err != nil {
		return p, err
	}
	if p.table, err = name("table"); err != nil {
		return p, err
	}
	if p.table != "" && p.db == "" {
		return p, errors.New("parameter table needs db: name the table's database too")
	}
	if q.Has("timeout") {
		s := q.Get("timeout")
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return p, fmt.Errorf("parameter timeout %q: not a duration such as 30s or 2m", shorten(s, 64))
		case d < 0:
			return p, fmt.Errorf("parameter timeout %s: want 0 or more", d)
		case d > max:
			return p, fmt.Errorf("parameter timeout %s: above http.wait_max_timeout (%s)", d, max)
		}
		p.timeout = d
	}
	if q.Has("scope") {
		switch s := q.Get("scope"); s {
		case string(scopeMember), string(scopeCluster):
			p.scope = waitScope(s)
		default:
			return p, fmt.Errorf("parameter scope %q: want member or cluster", shorten(s, 64))
		}
	}
	return p, nil
}

// WaitResult is the JSON answer of /v1/wait: 200 and 504 carry the target and
// the figure reached, 504 the reason; the other codes carry Error.
type WaitResult struct {
	Catalog string `json:"catalog,omitempty"`
	Scope   string `json:"scope,omitempty"`
	// Target is the event id waited for; Applied what the scope's figure had
	// reached when the answer was given (-1 unknown).
	Target  *int64  `json:"target_event_id,omitempty"`
	Applied *int64  `json:"applied_event_id,omitempty"`
	Waited  float64 `json:"waited_seconds"`
	Reason  string  `json:"reason,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// serveWait is GET /v1/wait.
func (a *Agent) serveWait(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	code, res := a.wait(w, r, start)
	res.Waited = time.Since(start).Seconds()
	result := "error"
	switch code {
	case http.StatusOK:
		result = "caught_up"
	case http.StatusGatewayTimeout:
		result = "timeout"
	case http.StatusTooManyRequests:
		result = "rejected"
	}
	a.waits.requests.WithLabelValues(result).Inc()
	a.waits.duration.Observe(res.Waited)
	if code == 0 {
		return // the client went away: nobody reads an answer
	}
	w.Header().Set("Content-Type", "application/json")
	if code == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", "GET, HEAD")
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(res)
}

// wait answers one request: its status code (0: the client went away) and body.
func (a *Agent) wait(w http.ResponseWriter, r *http.Request, start time.Time) (int, WaitResult) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return http.StatusMethodNotAllowed, WaitResult{Error: "method " + r.Method + ": want GET"}
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return http.StatusBadRequest, WaitResult{Error: "the query cannot be parsed: " + err.Error()}
	}
	p, err := parseWait(q, a.waits.maxTimeout)
	if err != nil {
		return http.StatusBadRequest, WaitResult{Error: err.Error()}
	}
	var l *catalogLoop
	for _, x := range a.loops {
		if x.cat.Name == p.catalog {
			l = x
		}
	}
	res := WaitResult{Catalog: p.catalog, Scope: string(p.scope)}
	if l == nil {
		res.Error = fmt.Sprintf("catalog %q is not served by this sidecar", p.catalog)
		return http.StatusNotFound, res
	}
	if !a.waits.admit() {
		res.Error = fmt.Sprintf("%d requests are already waiting (http.max_waiters): retry later", a.waits.max)
		return http.StatusTooManyRequests, res
	}
	defer a.waits.leave()
	// The server's read and write bounds are for short requests; this one
	// may wait up to its timeout. Without a longer read deadline the server's
	// background read would end the request's context at its read timeout.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(start.Add(p.timeout + waitGrace))
	_ = rc.SetWriteDeadline(start.Add(p.timeout + waitGrace))
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(p.timeout))
	defer cancel()
	return l.waitFor(ctx, r.Context(), p, res)
}

// waitTarget is a request's target: the event id and the lineage it belongs to.
type waitTarget struct {
	target, epoch int64
	// reread: the metastore's log is behind the committed cursor (a new
	// lineage is coming): the target is read again in it.
	reread bool
}

// waitFor waits until scope's figure reaches the target, ctx ends (timeout) or
// the client goes away (req).
func (l *catalogLoop) waitFor(ctx, req context.Context, p waitParams, res WaitResult) (int, WaitResult) {
	b := l.board
	if p.scope == scopeCluster {
		if !b.joinCluster() {
			res.Error = "this sidecar's cursor store cannot follow the other members' cursors: cluster scope is not available"
			return http.StatusServiceUnavailable, res
		}
		defer b.leaveCluster()
	}
	// A cluster-scope request needs the other members' cursors; a watch that
	// cannot read them within waitMembersRead makes it 503, not a hang.
	var membersBy <-chan time.Time
	timedOut := ctx.Done()
	if p.scope == scopeCluster && !b.replicated {
		t := time.NewTimer(waitMembersRead)
		defer t.Stop()
		membersBy = t.C
		if _, _, known := b.progress(p.scope); !known {
			// The request's timeout counts from the first read of the
			// members (bounded by waitMembersRead): timeout=0 still looks
			// at them once.
			timedOut = nil
		}
	}
	answer := func(code int, t waitTarget, applied int64) (int, WaitResult) {
		res.Target, res.Applied = &t.target, &applied
		return code, res
	}
	for {
		// The target is read within its own deadline (waitCallTimeout), not
		// the request's timeout: timeout=0 still reads it, and then only looks.
		t, err := l.readTarget(req, p)
		if err != nil {
			if req.Err() != nil {
				return 0, res
			}
			res.Error = err.Error()
			return http.StatusServiceUnavailable, res
		}
		w := &waiter{target: t.target, epoch: t.epoch, reread: t.reread}
	wait:
		for {
			v, applied := b.enqueue(p.scope, w)
			switch v {
			case caughtUp:
				return answer(http.StatusOK, t, applied)
			case rereadTarget:
				break wait
			}
			select {
			case <-w.woke:
				if _, _, known := b.progress(p.scope); known {
					timedOut = ctx.Done()
				}
			case <-membersBy:
				membersBy, timedOut = nil, ctx.Done()
				if err := b.membersNotFresh(); err != nil {
					b.dequeue(p.scope, w)
					res.Error = "cannot read the other members' cursors from etcd: " + err.Error()
					return answer(http.StatusServiceUnavailable, t, applied)
				}
				b.dequeue(p.scope, w)
			case <-req.Done():
				b.dequeue(p.scope, w)
				return 0, res
			case <-timedOut:
				b.dequeue(p.scope, w)
				if req.Err() != nil {
					return 0, res
				}
				if v, _, known := b.progress(p.scope); known {
					applied = v
				}
				res.Reason = l.waitReason(p.scope, t)
				return answer(http.StatusGatewayTimeout, t, applied)
			}
		}
	}
}

// readTarget reads the request's target: the metastore's current id N in the
// committed lineage, narrowed to the database (table) where the metastore can
// say so cheaply.
func (l *catalogLoop) readTarget(ctx context.Context, p waitParams) (waitTarget, error) {
	if err := l.watch.notFresh(); err != nil {
		return waitTarget{}, fmt.Errorf("the committed master cursor cannot be read from etcd: %w", err)
	}
	m, _ := l.watch.latest()
	// Not cancelled with the request: the metastore connection is the sync
	// loop's, and a call abandoned mid-way drops it. The deadline bounds it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitCallTimeout)
	n, err := l.cat.Source.CurrentEventID(cctx)
	cancel()
	if err != nil {
		return waitTarget{}, fmt.Errorf("read the metastore's current event id: %w", err)
	}
	t := waitTarget{target: n, epoch: m.Epoch}
	if _, e, known := l.board.progress(p.scope); known && e > m.Epoch {
		// The figure is already in a newer lineage than the watch has
		// delivered: n is read in that one.
		t.epoch = e
	} else if m.Exists && m.Value > n {
		// The log is behind what was committed of it: the metastore's log
		// was reset or another metastore answers; the master starts a new
		// lineage, in which the target is read again.
		t.reread, t.epoch = true, m.Epoch+1
		return t, nil
	}
	if p.db != "" {
		t.target = l.narrowTarget(ctx, p, t)
	}
	return t, nil
}

// narrowTarget is the newest event at or below t.target that concerns p's
// database (table), where the metastore filters by database (Hive 4:
// DatabaseEventSource); t.target otherwise. Only the events after what the
// scope's figure already reached are read: when none of them concerns the
// database, the figure is the target. A metastore that answers with the whole
// log (Hive 3 ignores the filter) is not asked again: reading the whole log is
// not cheap. Events whose header may name another
// database than the one they change count wherever they are logged.
func (l *catalogLoop) narrowTarget(ctx context.Context, p waitParams, t waitTarget) int64 {
	ds, ok := l.cat.Source.(DatabaseEventSource)
	if !ok || !hms.PushdownDatabase(p.db) || l.board.unfiltered.Load() {
		return t.target
	}
	after, epoch, known := l.board.progress(p.scope)
	if !known || epoch != t.epoch || after < 0 || after >= t.target {
		return t.target
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitCallTimeout) // as readTarget's
	f, err := ds.NextEventsOfDatabases(cctx, after, waitNarrowLimit, l.cat.SkipEventTypes, []string{p.db})
	cancel()
	if err == nil && f.Databases == 0 {
		l.board.unfiltered.Store(true)
	}
	if err != nil || f.Databases == 0 || f.Continuity != hms.Contiguous || f.Last < t.target {
		// Unfiltered (the metastore ignores the filter), not contiguous
		// with what the scope applied (events were cleaned: what is left
		// says nothing of those), incomplete up to the target, or failed:
		// the whole log's target.
		return t.target
	}
	newest := after
	for _, ev := range f.Events {
		if ev.ID > t.target {
			break
		}
		if concernsWait(ev, p) {
			newest = ev.ID
		}
	}
	return newest
}

// concernsWait says whether ev may change p's database (table). A COMMIT_TXN
// names no database (Hive 4 leaves its header empty, Hive 3.1 writes "null")
// yet refreshes the tables its transaction wrote, so it counts wherever it is.
func concernsWait(ev message.Event, p waitParams) bool {
	switch ev.Type {
	case message.EventAlterTable, message.EventAlterDatabase, message.EventCreateDatabase, message.EventCommitTxn:
		return true
	}
	if !strings.EqualFold(ev.DB, p.db) {
		return false
	}
	return p.table == "" || ev.Table == "" || strings.EqualFold(ev.Table, p.table)
}

// waitReason says what a timed-out request waited on: the pause key, the
// members or cursor behind, a failing sync.
func (l *catalogLoop) waitReason(scope waitScope, t waitTarget) string {
	var why []string
	if l.pause.isPaused() {
		why = append(why, "master paused (the pause key is set)")
	}
	if t.reread {
		why = append(why, fmt.Sprintf("the metastore's log is behind the committed cursor: waiting for the master to start epoch %d", t.epoch))
	} else {
		why = append(why, l.board.behind(scope, t.target, t.epoch)...)
	}
	if st := l.rec.snapshot(); st.failing {
		why = append(why, fmt.Sprintf("this member's sync failing since %s: %s", st.failingSince.UTC().Format(time.RFC3339), st.lastErr))
	}
	if l.elector.Leader() == "" {
		if _, master := l.elector.Current(); !master {
			why = append(why, "no master elected")
		}
	}
	return strings.Join(why, "; ")
}
