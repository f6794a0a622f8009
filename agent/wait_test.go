package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/testutil"
)

// Tests of GET /v1/wait over the in-memory doubles: one member, its loop stepped
// by hand, its master-cursor watch delivering what the test says.

// deliver makes the master-cursor watch deliver c, as the running watch would:
// fresh, and told to the recorder and through it to the waiters.
func (r *rig) deliver(c cursorstore.Cursor) {
	w := r.l.watch
	w.mu.Lock()
	w.val, w.known, w.fresh = c, true, func() error { return nil }
	w.mu.Unlock()
	r.l.rec.masterCursorSeen(c)
}

// deliverCommitted delivers what etcd holds now.
func (r *rig) deliverCommitted() {
	c, _ := r.store.MasterCursor(context.Background(), "hive")
	r.deliver(c)
}

// syncMaster steps the member as master until it is caught up, and delivers the
// committed cursor.
func (r *rig) syncMaster() {
	r.t.Helper()
	r.run(20)
	r.deliverCommitted()
}

type waitAnswer struct {
	code int
	res  WaitResult
	body string
}

func (r *rig) wait(ctx context.Context, query string) waitAnswer {
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/wait?"+query, nil)
	rec := httptest.NewRecorder()
	r.a.Handler(nil).ServeHTTP(rec, req)
	a := waitAnswer{code: rec.Code, body: rec.Body.String()}
	_ = json.Unmarshal(rec.Body.Bytes(), &a.res)
	return a
}

func (r *rig) waitAsync(ctx context.Context, query string) <-chan waitAnswer {
	ch := make(chan waitAnswer, 1)
	go func() { ch <- r.wait(ctx, query) }()
	return ch
}

// awaitWaiters waits until n requests wait.
func (r *rig) awaitWaiters(n int64) {
	r.t.Helper()
	testutil.Await(r.t, 10*time.Second, fmt.Sprintf("%d waiters", n), func() (bool, string) {
		got := r.a.waits.n.Load()
		return got == n, fmt.Sprintf("%d waiting", got)
	})
}

func (r *rig) waitResults(result string) float64 {
	return metricValue(r.a.waits.requests.WithLabelValues(result))
}

// metricValue is a counter's or gauge's value.
func metricValue(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		return -1
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

func val(p *int64) int64 {
	if p == nil {
		return -99
	}
	return *p
}

func newWaitRig(t *testing.T) (*rig, *memLog) {
	log := &memLog{}
	log.add("ALTER_TABLE", 10)
	r := newRig(t, log, newMemStore(), rigOpts{})
	r.becomeMaster()
	r.syncMaster()
	return r, log
}

func TestWaitAlreadyCaughtUpAnswersAtOnceReadingOnlyTheCurrentID(t *testing.T) {
	r, log := newWaitRig(t)
	log.mu.Lock()
	calls, fetches := log.calls, len(log.fetches)
	log.mu.Unlock()
	a := r.wait(context.Background(), "catalog=hive")
	if a.code != http.StatusOK || val(a.res.Target) != 10 || val(a.res.Applied) != 10 || a.res.Scope != "member" || a.res.Catalog != "hive" {
		t.Fatalf("wait on a caught-up member: HTTP %d %s, want 200 with target and applied 10", a.code, a.body)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.calls != calls+1 || len(log.fetches) != fetches {
		t.Errorf("the wait made %d metastore calls (%d fetches), want exactly one get_current_notificationEventId", log.calls-calls, len(log.fetches)-fetches)
	}
	if got := r.waitResults("caught_up"); got != 1 {
		t.Errorf("hmssync_wait_requests_total{result=caught_up} = %v, want 1", got)
	}
}

func TestWaitReturnsWhenTheStepAppliesTheTarget(t *testing.T) {
	r, log := newWaitRig(t)
	log.add("ALTER_TABLE", 5)
	ch := r.waitAsync(context.Background(), "catalog=hive&timeout=1m")
	r.awaitWaiters(1)
	select {
	case a := <-ch:
		t.Fatalf("the wait answered HTTP %d %s before the member applied event 15", a.code, a.body)
	default:
	}
	r.syncMaster()
	a := <-ch
	if a.code != http.StatusOK || val(a.res.Target) != 15 || val(a.res.Applied) < 15 {
		t.Fatalf("after the step applied up to 15: HTTP %d %s, want 200 at 15", a.code, a.body)
	}
	r.fe.mu.Lock()
	feAt := r.fe.applied
	r.fe.mu.Unlock()
	if got := feAt; got < 15 {
		t.Errorf("the wait answered caught up with the FE at %d, below the target 15", got)
	}
	if got := metricValue(r.a.waits.waiters); got != 0 {
		t.Errorf("hmssync_waiters = %v after the only waiter returned, want 0", got)
	}
}

func TestWaitParametersAreCheckedAndTheMessageNamesThem(t *testing.T) {
	r, _ := newWaitRig(t)
	for _, c := range []struct {
		query string
		code  int
		want  []string
	}{
		{"", 400, []string{"catalog", "missing"}},
		{"catalog=", 400, []string{"catalog", "empty"}},
		{"catalog=hive&timeout=soon", 400, []string{"timeout", `"soon"`, "duration"}},
		{"catalog=hive&timeout=-1s", 400, []string{"timeout", "-1s", "0 or more"}},
		{"catalog=hive&timeout=11m", 400, []string{"timeout", "11m0s", "http.wait_max_timeout", "10m0s"}},
		{"catalog=hive&timeout=9999999999h", 400, []string{"timeout", "duration"}},
		{"catalog=hive&timeout=1e3s", 400, []string{"timeout"}},
		{"catalog=hive&scope=everyone", 400, []string{"scope", `"everyone"`, "member or cluster"}},
		{"catalog=hive&table=t", 400, []string{"table", "db"}},
		{"catalog=hive&db=" + strings.Repeat("d", 300), 400, []string{"db", "300 bytes", "256"}},
		{"catalog=hive&db=a%00b", 400, []string{"db", "printable"}},
		{"catalog=hive&db=%ff", 400, []string{"db", "UTF-8"}},
		{"catalog=hive&catalog=hive", 400, []string{"catalog", "2 times"}},
		{"catalog=hive&tabel=t", 400, []string{`"tabel"`, "unknown parameter"}},
		{"catalog=iceberg", 404, []string{`"iceberg"`, "not served"}},
		{"catalog=hive&timeout=%zz", 400, []string{"query", "cannot be parsed"}},
	} {
		a := r.wait(context.Background(), c.query)
		if a.code != c.code {
			t.Errorf("?%s: HTTP %d %s, want %d", c.query, a.code, a.body, c.code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(a.res.Error, w) {
				t.Errorf("?%s: error %q does not say %q", c.query, a.res.Error, w)
			}
		}
	}
	if got := r.waitResults("error"); got != 16 {
		t.Errorf("hmssync_wait_requests_total{result=error} = %v after 16 refused requests", got)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/wait?catalog=hive", nil)
	rec := httptest.NewRecorder()
	r.a.Handler(nil).ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/wait: HTTP %d, want 405", rec.Code)
	}
}

func TestWaitTimeoutSaysWhatItWaitsOn(t *testing.T) {
	r, log := newWaitRig(t)
	log.add("ALTER_TABLE", 3)
	// The pause key, as the pause watch delivers it.
	r.a.pause.mu.Lock()
	r.a.pause.val, r.a.pause.known = true, true
	r.a.pause.mu.Unlock()
	start := time.Now()
	a := r.wait(context.Background(), "catalog=hive&timeout=200ms")
	if took := time.Since(start); a.code != http.StatusGatewayTimeout || took > 5*time.Second {
		t.Fatalf("wait for 13 with the member at 10: HTTP %d after %s %s, want 504 after 200ms", a.code, took, a.body)
	}
	if val(a.res.Target) != 13 || val(a.res.Applied) != 10 {
		t.Errorf("504 says target %d applied %d, want 13 and 10", val(a.res.Target), val(a.res.Applied))
	}
	for _, w := range []string{"master paused", "member m0 at 10"} {
		if !strings.Contains(a.res.Reason, w) {
			t.Errorf("reason %q does not say %q", a.res.Reason, w)
		}
	}
	if a.res.Waited < 0.2 {
		t.Errorf("waited_seconds %v, want at least the timeout 0.2", a.res.Waited)
	}
	if got := r.waitResults("timeout"); got != 1 {
		t.Errorf("hmssync_wait_requests_total{result=timeout} = %v, want 1", got)
	}
	// A zero timeout only looks.
	if a := r.wait(context.Background(), "catalog=hive&timeout=0s"); a.code != http.StatusGatewayTimeout {
		t.Errorf("timeout=0s behind the target: HTTP %d %s, want 504 at once", a.code, a.body)
	}
}

func TestWaitOfAClientThatWentAwayIsReleasedAtOnce(t *testing.T) {
	r, log := newWaitRig(t)
	log.add("ALTER_TABLE", 3)
	ctx, cancel := context.WithCancel(context.Background())
	ch := r.waitAsync(ctx, "catalog=hive&timeout=10m")
	r.awaitWaiters(1)
	cancel()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter whose client went away still waits")
	}
	r.awaitWaiters(0)
	b := r.l.board
	b.mu.Lock()
	queued := b.member.targets.Len() + len(b.member.epochs)
	b.mu.Unlock()
	if queued != 0 {
		t.Errorf("%d waiters still queued after their client went away", queued)
	}
	if got := r.waitResults("error"); got != 1 {
		t.Errorf("hmssync_wait_requests_total{result=error} = %v for the client that went away, want 1", got)
	}
}

func TestWaitersBeyondTheBoundAreRefused(t *testing.T) {
	r, log := newWaitRig(t)
	r.a.waits.max = 2
	log.add("ALTER_TABLE", 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a1, a2 := r.waitAsync(ctx, "catalog=hive&timeout=10m"), r.waitAsync(ctx, "catalog=hive&timeout=10m")
	r.awaitWaiters(2)
	a := r.wait(ctx, "catalog=hive&timeout=10m")
	if a.code != http.StatusTooManyRequests || !strings.Contains(a.res.Error, "http.max_waiters") {
		t.Fatalf("third waiter with http.max_waiters 2: HTTP %d %s, want 429 naming http.max_waiters", a.code, a.body)
	}
	if got := r.waitResults("rejected"); got != 1 {
		t.Errorf("hmssync_wait_requests_total{result=rejected} = %v, want 1", got)
	}
	r.syncMaster()
	for _, ch := range []<-chan waitAnswer{a1, a2} {
		if a := <-ch; a.code != http.StatusOK {
			t.Errorf("an admitted waiter answered HTTP %d %s once the member caught up", a.code, a.body)
		}
	}
}

// failingSource is a metastore that does not answer.
type failingSource struct{ EventSource }

func (failingSource) CurrentEventID(context.Context) (int64, error) {
	return 0, errors.New("dial tcp 10.0.0.1:9083: connect: connection refused")
}

func TestWaitTargetUnreadableAnswers503AtOnce(t *testing.T) {
	r, _ := newWaitRig(t)
	src := r.l.cat.Source
	r.l.cat.Source = failingSource{src}
	a := r.wait(context.Background(), "catalog=hive&timeout=10m")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.res.Error, "connection refused") || !strings.Contains(a.res.Error, "current event id") {
		t.Errorf("metastore unreachable: HTTP %d %s, want 503 saying the current id could not be read and why", a.code, a.body)
	}
	r.l.cat.Source = src
	r.l.watch.mu.Lock()
	r.l.watch.fresh = func() error {
		return errors.New("etcd watch of /c/catalogs/hive/cursor not fresh: no answer from etcd")
	}
	r.l.watch.mu.Unlock()
	a = r.wait(context.Background(), "catalog=hive&timeout=10m")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.res.Error, "not fresh") {
		t.Errorf("etcd unreachable: HTTP %d %s, want 503 saying the committed cursor cannot be read", a.code, a.body)
	}
	// Without a members watch (this store has none) cluster scope is refused.
	r.l.watch.mu.Lock()
	r.l.watch.fresh = func() error { return nil }
	r.l.watch.mu.Unlock()
	if a := r.wait(context.Background(), "catalog=hive&scope=cluster"); a.code != http.StatusServiceUnavailable {
		t.Errorf("cluster scope without a members watch: HTTP %d %s, want 503", a.code, a.body)
	}
}

// A metastore whose log was reset answers a current id below the committed
// cursor: the member's cursor of the old log is above it, and must not count.
func TestWaitOnAResetLogWaitsForTheNewLineage(t *testing.T) {
	r, log := newWaitRig(t)
	log.reset(4, "")
	ch := r.waitAsync(context.Background(), "catalog=hive&timeout=1m")
	r.awaitWaiters(1)
	select {
	case a := <-ch:
		t.Fatalf("with the member at 10 of the old log and the new log at 4: HTTP %d %s before the new lineage", a.code, a.body)
	default:
	}
	// The master notices the reset and refreshes into epoch 1.
	r.syncMaster()
	a := <-ch
	if a.code != http.StatusOK || val(a.res.Target) != 4 {
		t.Fatalf("after the new lineage: HTTP %d %s, want 200 at 4", a.code, a.body)
	}
	if e := r.l.cursor.Epoch(); e != 1 {
		t.Errorf("the member is in epoch %d, want 1: the wait answered before the new lineage", e)
	}
}

// dbLog is a memLog that filters by database as Hive 4 does.
type dbLog struct{ *memLog }

func (d dbLog) NextEventsOfDatabases(ctx context.Context, after int64, max int, skip, dbs []string) (hms.Fetch, error) {
	d.mu.Lock()
	d.calls++
	var f hms.Fetch
	for _, ev := range d.events {
		if ev.ID > after && len(f.Events) < max && ev.DB == dbs[0] {
			f.Events = append(f.Events, ev)
		}
	}
	f.Last, f.Current, f.Databases = d.current(), d.current(), 1
	d.mu.Unlock()
	return f, nil
}

// unfilteredLog answers database-filtered reads with the whole log, as
// *hms.Client does for a metastore that ignores the filter.
type unfilteredLog struct{ *memLog }

func (u unfilteredLog) NextEventsOfDatabases(ctx context.Context, after int64, max int, skip, _ []string) (hms.Fetch, error) {
	return u.NextEvents(ctx, after, max, skip)
}

func (m *memLog) addIn(db string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for range n {
		id := m.events[len(m.events)-1].ID + 1
		m.events = append(m.events, message.Event{ID: id, Type: "ADD_PARTITION", DB: db, Table: "t"})
	}
}

func TestWaitForADatabaseIgnoresOtherDatabasesWhereTheMetastoreFilters(t *testing.T) {
	r, log := newWaitRig(t)
	r.l.cat.Source = dbLog{log}
	log.addIn("other", 5) // 11..15, none of db
	a := r.wait(context.Background(), "catalog=hive&db=db&timeout=0s")
	if a.code != http.StatusOK || val(a.res.Target) != 10 {
		t.Errorf("db=db with only other databases' events after the cursor: HTTP %d %s, want 200 at 10", a.code, a.body)
	}
	log.addIn("db", 1) // 16
	log.addIn("other", 2)
	a = r.wait(context.Background(), "catalog=hive&db=db&table=t&timeout=0s")
	if a.code != http.StatusGatewayTimeout || val(a.res.Target) != 16 {
		t.Errorf("db=db&table=t with its event 16: HTTP %d %s, want 504 with target 16", a.code, a.body)
	}
	if a := r.wait(context.Background(), "catalog=hive&timeout=0s"); val(a.res.Target) != 18 {
		t.Errorf("the whole catalog's target %d, want the current id 18", val(a.res.Target))
	}
	// A metastore that ignores the filter (Hive 3) answers with the whole
	// log: the whole log's target, and it is not asked again.
	r.l.cat.Source = unfilteredLog{log}
	if a := r.wait(context.Background(), "catalog=hive&db=db&timeout=0s"); val(a.res.Target) != 18 {
		t.Errorf("db=db on a metastore that ignores the filter: target %d, want the current id 18", val(a.res.Target))
	}
	log.mu.Lock()
	calls := log.calls
	log.mu.Unlock()
	r.wait(context.Background(), "catalog=hive&db=db&timeout=0s")
	log.mu.Lock()
	if got := log.calls - calls; got != 1 {
		t.Errorf("a request naming a database made %d metastore calls after the metastore ignored the filter, want only the current id", got)
	}
	log.mu.Unlock()
	r.l.cat.Source = dbLog{log}
	// A name Hive would normalise is not asked for by name: the whole log.
	if a := r.wait(context.Background(), "catalog=hive&db=DB&timeout=0s"); val(a.res.Target) != 18 {
		t.Errorf("db=DB (not in Hive's normal form): target %d, want the current id 18", val(a.res.Target))
	}
}

// The server bounds reads and writes in time for short requests; a wait that
// lasts longer still gets its answer.
func TestWaitOutlastsTheServersReadAndWriteTimeouts(t *testing.T) {
	r, log := newWaitRig(t)
	log.add("ALTER_TABLE", 1)
	srv := NewHTTPServer(r.a.Handler(nil))
	srv.ReadTimeout, srv.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/v1/wait?catalog=hive&timeout=700ms")
	if err != nil {
		t.Fatalf("a wait of 700ms on a server with 100ms read and write timeouts: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), `"reason"`) {
		t.Errorf("HTTP %d %s, want the 504 at the request's own timeout", resp.StatusCode, body)
	}
}

// 10,000 concurrent requests with long timeouts at the default bound: 1,000
// wait, the others are refused at once; memory is measured, and every admitted
// one is answered once the target is applied.
func TestTenThousandConcurrentWaiters(t *testing.T) {
	r, log := newWaitRig(t)
	const n = 10000
	log.add("ALTER_TABLE", 1)
	h := r.a.Handler(nil)
	reqs := make([]*http.Request, n)
	recs := make([]*codeOnly, n)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/v1/wait?catalog=hive&timeout=10m", nil)
		recs[i] = &codeOnly{}
	}
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() { h.ServeHTTP(recs[i], reqs[i]) })
	}
	r.awaitWaiters(DefaultMaxWaiters)
	testutil.Await(t, 10*time.Second, "the requests beyond the bound refused", func() (bool, string) {
		got := r.waitResults("rejected")
		return got == n-DefaultMaxWaiters, fmt.Sprintf("%v refused", got)
	})
	during := memNow()
	// The loop steps as before: the waiters' wake-ups are the move that
	// reaches their target, once.
	wakes := r.l.board.wakes
	r.syncMaster()
	wg.Wait()
	after := memNow()
	heapHeld, stackHeld := during.heap-after.heap, during.stack-after.stack
	t.Logf("%d requests, %d waiting: they held %d KiB of heap (%d bytes per waiter) and %d KiB of goroutine stacks",
		n, DefaultMaxWaiters, heapHeld>>10, heapHeld/DefaultMaxWaiters, stackHeld>>10)
	if heapHeld > 4<<20 || heapHeld+stackHeld > 16<<20 {
		t.Errorf("%d waiting requests held %d KiB of heap and %d KiB of stacks, want at most 4 MiB of heap and 16 MiB in all",
			DefaultMaxWaiters, heapHeld>>10, stackHeld>>10)
	}
	ok := 0
	for _, rec := range recs {
		switch rec.code {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("a request answered HTTP %d", rec.code)
		}
	}
	if ok != DefaultMaxWaiters {
		t.Errorf("%d requests caught up, want the %d admitted", ok, DefaultMaxWaiters)
	}
	if got := r.l.board.wakes - wakes; got != DefaultMaxWaiters {
		t.Errorf("applying the target woke waiters %d times, want once each (%d)", got, DefaultMaxWaiters)
	}
}

// codeOnly is a ResponseWriter that keeps the status code only, as a client
// that reads the answer and lets it go.
type codeOnly struct{ code int }

func (c *codeOnly) Header() http.Header         { return http.Header{} }
func (c *codeOnly) Write(p []byte) (int, error) { return len(p), nil }
func (c *codeOnly) WriteHeader(code int)        { c.code = code }

type memFigures struct{ heap, stack int64 }

func memNow() memFigures {
	// Twice: the first collection empties the pools into their victim
	// caches, the second frees those.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memFigures{heap: int64(ms.HeapAlloc), stack: int64(ms.StackInuse)}
}

// countingStore is a memStore that counts every call of the etcd port, and
// follows the members' cursors (MemberWatcher) from what they wrote, every
// member live.
type countingStore struct {
	*memStore
	cmu         sync.Mutex
	calls       map[string]int
	membersOpen int
}

func (c *countingStore) count(name string) {
	c.cmu.Lock()
	c.calls[name]++
	c.cmu.Unlock()
}

func (c *countingStore) snapshot() (map[string]int, int) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	out := map[string]int{}
	for k, v := range c.calls {
		out[k] = v
	}
	return out, c.membersOpen
}

func (c *countingStore) MasterCursor(ctx context.Context, cat string) (cursorstore.Cursor, error) {
	c.count("MasterCursor")
	return c.memStore.MasterCursor(ctx, cat)
}

func (c *countingStore) CommitMaster(ctx context.Context, cat string, cm cursorstore.Commit) (cursorstore.Cursor, error) {
	c.count("CommitMaster")
	return c.memStore.CommitMaster(ctx, cat, cm)
}

func (c *countingStore) RewindMaster(ctx context.Context, cat string, cm cursorstore.Commit) (cursorstore.Cursor, error) {
	c.count("RewindMaster")
	return c.memStore.RewindMaster(ctx, cat, cm)
}

func (c *countingStore) MemberCursor(ctx context.Context, m, cat string) (cursorstore.Cursor, error) {
	c.count("MemberCursor")
	return c.memStore.MemberCursor(ctx, m, cat)
}

func (c *countingStore) PutMemberCursor(ctx context.Context, m, cat string, v, e int64) error {
	c.count("PutMemberCursor")
	return c.memStore.PutMemberCursor(ctx, m, cat, v, e)
}

func (c *countingStore) Paused(ctx context.Context) (bool, error) {
	c.count("Paused")
	return c.memStore.Paused(ctx)
}

func (c *countingStore) WatchMembers(ctx context.Context, _ string) cursorstore.Watch[map[string]cursorstore.MemberProgress] {
	c.count("WatchMembers")
	c.cmu.Lock()
	c.membersOpen++
	c.cmu.Unlock()
	c.memStore.mu.Lock()
	all := map[string]cursorstore.MemberProgress{}
	for m, v := range c.memStore.members {
		all[m] = cursorstore.MemberProgress{Live: true, HasCursor: true, Value: v[0], Epoch: v[1]}
	}
	c.memStore.mu.Unlock()
	out := make(chan map[string]cursorstore.MemberProgress, 1)
	out <- all
	go func() {
		<-ctx.Done()
		c.cmu.Lock()
		c.membersOpen--
		c.cmu.Unlock()
		close(out)
	}()
	return cursorstore.Watch[map[string]cursorstore.MemberProgress]{C: out}
}

// The wait adds no metastore or etcd call while nobody waits: idle master steps
// cost the same before and after requests of both scopes, and the members watch
// is open only while a cluster-scope request waits.
func TestNobodyWaitingCostsNoMetastoreOrEtcdCall(t *testing.T) {
	r, log := newWaitRig(t)
	cs := &countingStore{memStore: r.store, calls: map[string]int{}}
	r.l.store = cs
	r.l.board = newWaitBoard("m0", "hive", applier.ScopeLocal, cs)
	r.l.rec.board = r.l.board
	r.l.board.ownMoved(r.l.cursor.Value(), r.l.cursor.Epoch())
	r.syncMaster()
	idle := func() (hmsCalls int, etcdCalls map[string]int) {
		t.Helper()
		log.mu.Lock()
		before := log.calls
		log.mu.Unlock()
		base, _ := cs.snapshot()
		for range 10 {
			if out, err := r.step(); err != nil || out != idle {
				t.Fatalf("idle step: %v %v", out, err)
			}
		}
		log.mu.Lock()
		hmsCalls = log.calls - before
		log.mu.Unlock()
		now, _ := cs.snapshot()
		etcdCalls = map[string]int{}
		for k, v := range now {
			if v != base[k] {
				etcdCalls[k] = v - base[k]
			}
		}
		return hmsCalls, etcdCalls
	}
	hmsBefore, etcdBefore := idle()
	if a := r.wait(context.Background(), "catalog=hive"); a.code != http.StatusOK {
		t.Fatalf("member scope: HTTP %d %s", a.code, a.body)
	}
	// The other member m1 is behind: a cluster-scope request opens the
	// members watch, times out, and closes it.
	seedMember(r.store, "m1", 5, 0)
	if a := r.wait(context.Background(), "catalog=hive&scope=cluster&timeout=100ms"); a.code != http.StatusGatewayTimeout || !strings.Contains(a.res.Reason, "member m1 at 5") {
		t.Fatalf("cluster scope with m1 at 5: HTTP %d %s, want 504 naming m1", a.code, a.body)
	}
	testutil.Await(t, 5*time.Second, "the members watch closed after the cluster-scope request", func() (bool, string) {
		calls, open := cs.snapshot()
		return calls["WatchMembers"] == 1 && open == 0, fmt.Sprintf("opened %d times, %d open; want once and none", calls["WatchMembers"], open)
	})
	hmsAfter, etcdAfter := idle()
	t.Logf("10 idle master steps: %d metastore calls and etcd calls %v before any wait; %d and %v after requests of both scopes",
		hmsBefore, etcdBefore, hmsAfter, etcdAfter)
	if hmsAfter != hmsBefore || fmt.Sprint(etcdAfter) != fmt.Sprint(etcdBefore) {
		t.Errorf("idle steps cost %d metastore calls and etcd %v after the waits, %d and %v before: waiting left a cost behind",
			hmsAfter, etcdAfter, hmsBefore, etcdBefore)
	}
	if calls, _ := cs.snapshot(); calls["WatchMembers"] != 1 {
		t.Errorf("idle steps opened the members watch (%d opens in all)", calls["WatchMembers"])
	}
}
