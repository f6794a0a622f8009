package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"weak"

	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// In-memory doubles of the ports (ports.go), for unit tests of the sync steps
// that run in milliseconds and are deterministic: a test drives one loop step by
// step (catalogLoop.step) and sets what the etcd watch shows by hand, which is
// how a stale or late watch value is reproduced exactly. The etcd and metastore
// semantics they imitate are those the production packages implement and test
// against real parts (cursorstore against embedded etcd, hms against the fake
// metastore's Thrift).

// memLog is a metastore's notification log.
type memLog struct {
	mu     sync.Mutex
	events []message.Event // ascending ids; the oldest may have been cleaned
	// ignoreSkip imitates servers that do not know the skip list field: every
	// type is returned and counted towards max (the client filters).
	ignoreSkip bool
	uuid       string // "" = the metastore offers no identity
	// afterCurrent, when set, runs once after the next CurrentEventID (to
	// replace the log between the master's read of the id and its fetch).
	afterCurrent func(*memLog)
	// served records the highest id each fetch returned, and who asked.
	served []int64
	// calls counts the polls and fetches (get_current_notificationEventId,
	// get_next_notification); the db uuid is not counted, since the
	// production client reads it once per connection.
	calls int
	// fetches records every get_next_notification asked, in order;
	// onFetch, when set, runs after each is answered (outside the lock).
	fetches []fetchCall
	onFetch func(fetchCall)
	// answers, when trackAnswers is set, holds a weak pointer to the events
	// of every answer that returned any, so that a test can tell how many
	// answers the loop still holds (liveAnswers).
	trackAnswers bool
	answers      []weak.Pointer[message.Event]
	// dupes makes every answer hold each event twice and, first, the event
	// with the requested id itself, as several metastore instances sharing
	// one database write them (HIVE-16886) and a source that does not drop
	// them (unlike hms.Client) would hand them on.
	dupes bool
}

// liveAnswers collects garbage and counts the fetch answers whose events are
// still reachable.
func (m *memLog) liveAnswers() int {
	runtime.GC()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, p := range m.answers {
		if p.Value() != nil {
			n++
		}
	}
	return n
}

// fetchCall is one get_next_notification asked of a memLog.
type fetchCall struct {
	after      int64
	max        int
	serverSkip bool  // the skip list was sent
	last       int64 // the highest id answered (after if none)
}

func (m *memLog) add(typ string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for range n {
		id := int64(1)
		if len(m.events) > 0 {
			id = m.events[len(m.events)-1].ID + 1
		}
		m.events = append(m.events, message.Event{ID: id, Type: typ, DB: "db", Table: fmt.Sprintf("t%d", id)})
	}
}

// reset replaces the log by a new one with n events (a new metastore database).
func (m *memLog) reset(n int, uuid string) {
	m.mu.Lock()
	m.events, m.uuid = nil, uuid
	m.mu.Unlock()
	m.add("ALTER_TABLE", n)
}

func (m *memLog) current() int64 {
	if len(m.events) == 0 {
		return 0
	}
	return m.events[len(m.events)-1].ID
}

func (m *memLog) CurrentEventID(context.Context) (int64, error) {
	m.mu.Lock()
	m.calls++
	cur, hook := m.current(), m.afterCurrent
	m.afterCurrent = nil
	m.mu.Unlock()
	if hook != nil {
		hook(m)
	}
	return cur, nil
}

func (m *memLog) MetastoreUUID(context.Context) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.uuid, m.uuid != "", nil
}

// NextEvents classifies like hms.Client.NextEvents (SPEC §2 step 5).
func (m *memLog) NextEvents(ctx context.Context, after int64, max int, skip []string) (hms.Fetch, error) {
	f, err := m.nextEvents(ctx, after, max, skip)
	m.mu.Lock()
	call := fetchCall{after: after, max: max, serverSkip: len(skip) > 0, last: f.Last}
	m.fetches = append(m.fetches, call)
	hook := m.onFetch
	m.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	return f, err
}

func (m *memLog) nextEvents(_ context.Context, after int64, max int, skip []string) (hms.Fetch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	f := hms.Fetch{Last: after}
	first := int64(-1)
	for _, ev := range m.events {
		if ev.ID <= after {
			continue
		}
		skipped := slices.Contains(skip, ev.Type)
		if skipped && !m.ignoreSkip {
			continue // the server leaves it out and does not count it
		}
		if len(f.Events)+f.Skipped == max {
			break
		}
		if first < 0 {
			first = ev.ID
		}
		f.Last = ev.ID
		if skipped {
			f.Skipped++
			continue
		}
		f.Events = append(f.Events, ev)
	}
	if m.dupes {
		f.Events = withDupes(m.events, after, f.Events)
	}
	m.served = append(m.served, f.Last)
	if m.trackAnswers && len(f.Events) > 0 {
		m.answers = append(m.answers, weak.Make(&f.Events[0]))
	}
	oldest := int64(-1)
	if len(m.events) > 0 {
		oldest = m.events[0].ID
	}
	cur := m.current()
	switch {
	case first < 0:
		f.Current = cur
		if cur < after {
			f.Continuity = hms.Reset
		} else if cur > after && (oldest < 0 || oldest > after+1) {
			f.Continuity = hms.Gap
		}
	case first > after+1 && (len(skip) == 0 || oldest > after+1):
		f.Continuity = hms.Gap
	}
	return f, nil
}

// memDecoder turns each event into one REFRESH_TABLE change of its table;
// events of type POISON cannot be decoded.
type memDecoder struct{}

func (memDecoder) Decode(ev message.Event) ([]change.Descriptor, error) {
	if ev.Type == "POISON" {
		return nil, errors.New("poison")
	}
	return []change.Descriptor{{EventID: ev.ID, Op: change.RefreshTable, DB: ev.DB, Table: ev.Table}}, nil
}

// hookDecoder is a memDecoder that runs before, when set, ahead of each event.
type hookDecoder struct {
	before func(message.Event)
}

func (h hookDecoder) Decode(ev message.Event) ([]change.Descriptor, error) {
	if h.before != nil {
		h.before(ev)
	}
	return memDecoder{}.Decode(ev)
}

// memFE is an FE that speaks like the native protocol: it keeps the last
// to_event_id applied and the event ids it received since its last full
// refresh.
type memFE struct {
	mu      sync.Mutex
	scope   applier.Scope
	applied int64
	askErr  error // what AppliedEventID fails with, if set
	// failNext, if set, is what the next Apply fails with (nothing applied).
	failNext error
	batches  []change.Batch
	// beforeApply, when set, runs before each batch is applied (outside
	// the lock); an error fails the apply, nothing applied.
	beforeApply func(change.Batch) error
}

func (f *memFE) Dialect() string      { return "native" }
func (f *memFE) Scope() applier.Scope { return f.scope }
func (f *memFE) Check(context.Context) error {
	return nil
}

func (f *memFE) Apply(_ context.Context, b change.Batch) error {
	f.mu.Lock()
	hook := f.beforeApply
	f.mu.Unlock()
	if hook != nil {
		if err := hook(b); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failNext; err != nil {
		f.failNext = nil
		return err
	}
	f.batches = append(f.batches, b)
	if b.FullRefresh || b.To > f.applied {
		f.applied = b.To
	}
	return nil
}

// refreshes counts the full refreshes received.
func (f *memFE) refreshes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.batches {
		if b.FullRefresh {
			n++
		}
	}
	return n
}

// eventsSinceRefresh lists the event ids applied since the last full refresh,
// and the refresh's id (-1: none).
func (f *memFE) eventsSinceRefresh() (ids []int64, refreshedAt int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	refreshedAt = -1
	for _, b := range f.batches {
		if b.FullRefresh {
			ids, refreshedAt = nil, b.To
			continue
		}
		for _, c := range b.Changes {
			ids = append(ids, c.EventID)
		}
	}
	return ids, refreshedAt
}

// memReportingFE is a memFE that answers AppliedReporter.
type memReportingFE struct{ *memFE }

func (f memReportingFE) AppliedEventID(context.Context, string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.askErr != nil {
		return 0, f.askErr
	}
	return f.applied, nil
}

// memStore is the etcd side: the committed cursor with its epoch and metastore
// uuid, members' durable cursors with their epochs, and the fencing by leader
// key and revisions, as cursorstore implements them.
type memStore struct {
	mu  sync.Mutex
	rev int64
	// the committed keys of the one catalog: value, mod revision
	cursor, epoch   int64
	cursorRev       int64
	epochRev        int64
	uuid            string
	uuidRev         int64
	leader          election.Token // the token that currently holds the role
	members         map[string][2]int64
	memberWrites    map[string][]int64 // every value each member wrote
	commits, rewind int
	committed       []int64          // every value a fenced write committed, in order
	seed            cursorstore.Seed // the seed key (hmssync cursor seed)
	// txns is the master's open-transaction state (catalogs/<c>/txns),
	// memberTxns each member's (members/<m>/txns/<c>); txnsWrites counts
	// the fenced writes that wrote the master's.
	txns       string
	txnsRev    int64
	txnsWrites int
	memberTxns map[string]string
}

func newMemStore() *memStore {
	return &memStore{members: map[string][2]int64{}, memberWrites: map[string][]int64{}, memberTxns: map[string]string{}}
}

func (s *memStore) masterLocked() cursorstore.Cursor {
	c := cursorstore.Cursor{Exists: s.cursorRev != 0, Rev: s.cursorRev, Epoch: s.epoch, EpochRev: s.epochRev, Metastore: s.uuid, MetastoreRev: s.uuidRev,
		Txns: s.txns, TxnsRev: s.txnsRev}
	c.Seed = s.seed
	if c.Exists {
		c.Value, c.Raw = s.cursor, fmt.Sprint(s.cursor)
	}
	return c
}

func (s *memStore) MasterCursor(context.Context, string) (cursorstore.Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.masterLocked(), nil
}

func (s *memStore) fenced(tok election.Token, lastSeen cursorstore.Cursor, value, epoch int64, uuid, txns string) (cursorstore.Cursor, error) {
	if tok != s.leader || !tok.Valid() {
		return s.masterLocked(), cursorstore.ErrNotLeader
	}
	if lastSeen.Rev != s.cursorRev || lastSeen.EpochRev != s.epochRev {
		return s.masterLocked(), cursorstore.ErrConflict
	}
	s.rev++
	s.cursor, s.cursorRev = value, s.rev
	s.committed = append(s.committed, value)
	if epoch != s.epoch || s.epochRev == 0 {
		s.epoch, s.epochRev = epoch, s.rev
	}
	if uuid != "" && uuid != s.uuid {
		s.uuid, s.uuidRev = uuid, s.rev
	}
	if txns != "" {
		s.txns, s.txnsRev = txns, s.rev
		s.txnsWrites++
	}
	return s.masterLocked(), nil
}

func (s *memStore) CommitMaster(_ context.Context, _ string, c cursorstore.Commit) (cursorstore.Cursor, error) {
	tok, lastSeen, value, uuid := c.Token, c.Base, c.Value, c.Metastore
	s.mu.Lock()
	defer s.mu.Unlock()
	if lastSeen.Exists && value < lastSeen.Value {
		return lastSeen, cursorstore.ErrBackwards
	}
	if uuid != "" && lastSeen.Metastore != "" && uuid != lastSeen.Metastore {
		return lastSeen, cursorstore.ErrNewLineage
	}
	s.commits++
	return s.fenced(tok, lastSeen, value, lastSeen.Epoch, uuid, c.Txns)
}

func (s *memStore) RewindMaster(_ context.Context, _ string, c cursorstore.Commit) (cursorstore.Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rewind++
	return s.fenced(c.Token, c.Base, c.Value, c.Base.Epoch+1, c.Metastore, c.Txns)
}

// operatorSet is `hmssync cursor set` / `cursor reset` (-1).
func (s *memStore) operatorSet(value int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	if value == -1 || (s.cursorRev != 0 && value < s.cursor) {
		s.epoch, s.epochRev = s.epoch+1, s.rev
	}
	s.cursor, s.cursorRev = value, s.rev
	s.txns, s.txnsRev = "", 0 // as cursorstore's SetMaster deletes it
}

// commitAs writes the committed keys as another master would have.
func (s *memStore) commitAs(value, epoch int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	s.cursor, s.cursorRev = value, s.rev
	if epoch != s.epoch || s.epochRev == 0 {
		s.epoch, s.epochRev = epoch, s.rev
	}
}

func (s *memStore) WatchMaster(ctx context.Context, _ string) cursorstore.Watch[cursorstore.Cursor] {
	return idleWatch[cursorstore.Cursor](ctx)
}

func (s *memStore) MemberCursor(_ context.Context, member, _ string) (cursorstore.Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.members[member]
	if !ok {
		return cursorstore.Cursor{}, nil
	}
	return cursorstore.Cursor{Value: v[0], Exists: true, Rev: 1, Epoch: v[1], Txns: s.memberTxns[member]}, nil
}

func (s *memStore) PutMemberCursorTxns(ctx context.Context, member, catalog string, value, epoch int64, txns string) error {
	if err := s.PutMemberCursor(ctx, member, catalog, value, epoch); err != nil {
		return err
	}
	if txns != "" {
		s.mu.Lock()
		s.memberTxns[member] = txns
		s.mu.Unlock()
	}
	return nil
}

func (s *memStore) PutMemberCursor(_ context.Context, member, _ string, value, epoch int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[member] = [2]int64{value, epoch}
	s.memberWrites[member] = append(s.memberWrites[member], value)
	return nil
}

// Paused is the pause key as read from etcd: the master reads it while its
// watch has not delivered (as here, where watches never do).
func (s *memStore) Paused(context.Context) (bool, error) { return false, nil }

func (s *memStore) WatchPause(ctx context.Context) cursorstore.Watch[bool] {
	return idleWatch[bool](ctx)
}

// idleWatch never delivers: tests set what the loop's watch shows by hand.
func idleWatch[T any](ctx context.Context) cursorstore.Watch[T] {
	ch := make(chan T)
	go func() { <-ctx.Done(); close(ch) }()
	return cursorstore.Watch[T]{C: ch}
}

// memElector holds the role as a test says.
type memElector struct {
	mu     sync.Mutex
	term   election.Term
	master bool
	ch     chan struct{}
}

func (e *memElector) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (e *memElector) Current() (election.Term, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.term, e.master
}
func (e *memElector) Changed() <-chan struct{} { return e.ch }
func (e *memElector) Leader() string           { return "" }
func (e *memElector) StepDown(string) {
	e.mu.Lock()
	e.master = false
	e.mu.Unlock()
}

// rig is one member's catalog loop over the doubles.
type rig struct {
	t     *testing.T
	log   *memLog
	fe    *memFE
	store *memStore
	el    *memElector
	a     *Agent
	l     *catalogLoop
	term  election.Term
}

type rigOpts struct {
	scope   applier.Scope // default local
	batch   int           // default 100
	skip    []string
	report  bool // the FE answers AppliedEventID
	member  string
	decoder EventDecoder // default memDecoder
	// healsPerHour is Config.SelfHealMaxPerHour (0: the default).
	healsPerHour int
	// include is Catalog.Include (unanchored patterns); txnTimeout
	// Catalog.TxnTimeout.
	include    []string
	txnTimeout time.Duration
	// txnLookback is Catalog.TxnLookback.
	txnLookback int
}

func newRig(t *testing.T, log *memLog, store *memStore, o rigOpts) *rig {
	t.Helper()
	if o.scope == "" {
		o.scope = applier.ScopeLocal
	}
	if o.batch == 0 {
		o.batch = 100
	}
	if o.member == "" {
		o.member = "m0"
	}
	fe := &memFE{scope: o.scope, applied: -1}
	var app applier.Applier = fe
	if o.report {
		app = memReportingFE{fe}
	}
	el := &memElector{ch: make(chan struct{})}
	var dec EventDecoder = memDecoder{}
	if o.decoder != nil {
		dec = o.decoder
	}
	a, err := New(Config{
		Cluster: "c", Member: o.member, Applier: app, Scope: o.scope, Elector: el, Store: store,
		Catalogs: []Catalog{{Name: "hive", Source: log, Decoder: dec, BatchSize: o.batch,
			PollInterval: time.Second, SkipEventTypes: o.skip, Include: anchored(o.include...), TxnTimeout: o.txnTimeout, TxnLookback: o.txnLookback}},
		SelfHealMaxPerHour: o.healsPerHour,
		Logger:             zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, log: log, fe: fe, store: store, el: el, a: a, l: a.loops[0]}
}

// becomeMaster gives the member the role with a fresh token.
func (r *rig) becomeMaster() {
	r.store.mu.Lock()
	r.store.rev++
	tok := election.Token{Key: "/e/" + r.a.cfg.Member, Rev: r.store.rev, Lease: 1}
	r.store.leader = tok
	r.store.mu.Unlock()
	r.el.mu.Lock()
	r.term, r.el.term, r.el.master = election.Term{Token: tok}, election.Term{Token: tok}, true
	r.el.mu.Unlock()
}

// showWatch makes the loop's master-cursor watch show c, as if delivered.
func (r *rig) showWatch(c cursorstore.Cursor) {
	w := r.l.watch
	w.mu.Lock()
	w.val, w.known = c, true
	w.mu.Unlock()
}

// showCommitted makes the watch show what etcd holds now.
func (r *rig) showCommitted() {
	c, _ := r.store.MasterCursor(context.Background(), "hive")
	r.showWatch(c)
}

// step runs one step in the member's current role, the watch showing etcd's
// current state first unless the test set it.
func (r *rig) step() (outcome, error) {
	r.t.Helper()
	term, master := r.el.Current()
	return r.l.step(context.Background(), term, master)
}

// run steps until the loop waits (idle, waitMaster) or n steps passed.
func (r *rig) run(n int) {
	r.t.Helper()
	for range n {
		r.showCommitted()
		out, err := r.step()
		if err != nil {
			r.t.Fatalf("step: %v", err)
		}
		if out != again {
			return
		}
	}
	r.t.Fatalf("still stepping after %d steps", n)
}

// keptSince are the ids of the log's events of kept types above id.
func (m *memLog) keptAbove(id int64, skip []string) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int64
	for _, ev := range m.events {
		if ev.ID > id && !slices.Contains(skip, ev.Type) {
			out = append(out, ev.ID)
		}
	}
	return out
}

// checkFEHoldsLog fails unless the FE applied every kept event after its last
// full refresh (or after start, the cursor it held before the test, without
// one), up to the metastore's current id.
func (r *rig) checkFEHoldsLog(start int64, skip []string) {
	r.t.Helper()
	got, at := r.fe.eventsSinceRefresh()
	if at < 0 {
		at = start
	}
	want := r.log.keptAbove(at, skip)
	for _, id := range want {
		if !slices.Contains(got, id) {
			r.t.Fatalf("the FE never received event %d (refreshed as of %d; applied since: %v; kept events of the log above it: %v)", id, at, got, want)
		}
	}
}

// withDupes is evs with each event twice, after the event with id after when
// the log holds it (memLog.dupes).
func withDupes(log []message.Event, after int64, evs []message.Event) []message.Event {
	var out []message.Event
	for _, ev := range log {
		if ev.ID == after {
			out = append(out, ev)
		}
	}
	for _, ev := range evs {
		out = append(out, ev, ev)
	}
	return out
}
