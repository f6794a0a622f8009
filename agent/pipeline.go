package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// The steps shared by master and follower: read, decode, filter, apply.

func (l *catalogLoop) currentEventID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.callTimeout())
	defer cancel()
	cur, err := l.cat.Source.CurrentEventID(ctx)
	l.progressed()
	if err != nil {
		l.rec.metastoreRead(err)
		return 0, fmt.Errorf("read the metastore's current event id: %w", err)
	}
	l.rec.metastoreCurrent(cur)
	l.updateLag()
	return cur, nil
}

// fetch reads the fetch k from the metastore: a master's with the skip list
// (and push-down), a follower's without and cut at its bound (fetchEvents).
func (l *catalogLoop) fetch(ctx context.Context, k fetchKey) (hms.Fetch, error) {
	f, err := l.fetchEvents(ctx, k.after, k.max, k.master())
	if err != nil || f.Continuity != hms.Contiguous || k.bound == noBound {
		return f, err
	}
	// What the step moves its cursor to is bounded by the last id read: not
	// past the events dropped here.
	f.Events = belowBound(f.Events, k.bound)
	f.Last = min(f.Last, k.bound)
	return f, nil
}

// fetchEvents reads up to max events after the id after. With serverSkip the
// skip list goes to the metastore, which then counts only kept events towards
// max, and so, when the include patterns name the catalog's databases
// (l.pushDBs), does the database filter (push-down: the ids read are then
// bounded by the current id, not by max). Without serverSkip the metastore
// returns every event and the skipped ones are dropped here, so that max bounds
// the ids read (a follower must not read past the master cursor). Since
// l.pushDBs is fixed for the loop, the role is all a read-ahead's key needs to
// say about this.
func (l *catalogLoop) fetchEvents(ctx context.Context, after int64, max int, serverSkip bool) (hms.Fetch, error) {
	ctx, cancel := context.WithTimeout(ctx, l.callTimeout())
	defer cancel()
	skip := l.cat.SkipEventTypes
	if !serverSkip {
		skip = nil
	}
	start := time.Now()
	var f hms.Fetch
	var err error
	if src, ok := l.cat.Source.(DatabaseEventSource); ok && serverSkip && len(l.pushDBs) > 0 {
		f, err = src.NextEventsOfDatabases(ctx, after, max, skip, l.pushDBs)
	} else {
		f, err = l.cat.Source.NextEvents(ctx, after, max, skip)
	}
	l.progressed()
	dropRepeats(&f, after)
	l.rec.fetched(f, time.Since(start), err)
	if err != nil {
		return f, fmt.Errorf("fetch up to %d events after %d from the metastore: %w", max, after, err)
	}
	if !serverSkip && len(l.cat.SkipEventTypes) > 0 {
		kept := f.Events[:0]
		for _, ev := range f.Events {
			if slices.Contains(l.cat.SkipEventTypes, ev.Type) {
				f.Skipped++
				continue
			}
			kept = append(kept, ev)
		}
		f.Events = kept
	}
	return f, nil
}

// applyEvents decodes and filters evs and applies them as one batch (own, to].
// An empty evs still sends an empty batch, so that an FE speaking the native
// protocol learns that its cursor moved past skipped events.
func (l *catalogLoop) applyEvents(ctx context.Context, evs []message.Event, to int64) error {
	var d decoded
	if err := l.decode(evs, &d, false); err != nil {
		l.countPoison(err)
		return err
	}
	return l.applyDecoded(ctx, &d, to)
}

// decoded is what events decoded to, ready to be applied as one batch. It holds
// the changes only, not the messages, so that the master can decode several
// fetches into one batch without keeping their messages in memory.
type decoded struct {
	changes []change.Descriptor
	// applied and skipped count the events that did and did not yield a
	// change by type, for the counters once the batch is applied.
	applied, skipped typeCounts
	// poisoned are the events that could not be decoded, to be healed by
	// the objects they concern.
	poisoned []poisonedEvent
	// txns are the transaction events, in order, with their places among
	// changes (txnstate.go).
	txns []txnEvent
}

// typeCounts counts events by type. A fetch holds a handful of types, so a
// short list costs less than a map, and the counters are then moved once per
// type and batch rather than once per event.
type typeCounts []typeCount

type typeCount struct {
	typ string
	n   int
}

func (c *typeCounts) add(typ string, n int) {
	for i := range *c {
		if (*c)[i].typ == typ {
			(*c)[i].n += n
			return
		}
	}
	*c = append(*c, typeCount{typ, n})
}

// countPoison counts the event a decode error (a *poisonError) names. A decode
// is counted when the step meets its error, not when a read-ahead that may be
// discarded does.
func (l *catalogLoop) countPoison(err error) {
	if p, ok := err.(*poisonError); ok {
		l.rec.poisoned(p.eventType)
	}
}

// decode decodes and filters evs into d, on one goroutine while another fetch
// is in flight (decodeWorkers). An event that cannot be decoded is kept in d as
// poisoned when the decoder can name the objects it concerns (the step heals
// just those); otherwise it is a *poisonError (the first one in the log's order,
// if there are several), not counted yet (countPoison).
func (l *catalogLoop) decode(evs []message.Event, d *decoded, inFlight bool) error {
	start := time.Now()
	descs, errs := decodeAll(l.cat.Decoder, evs, l.decodeWorkers(inFlight))
	if d.changes == nil {
		d.changes = make([]change.Descriptor, 0, len(evs)) // about one change per event
	}
	for i, ev := range evs {
		err := l.decodeTxn(ev, d)
		if err == nil && errs != nil {
			err = errs[i]
		}
		if err != nil {
			pe := &poisonError{eventID: ev.ID, eventType: ev.Type, err: err}
			objs := l.attribute(ev)
			if len(objs) == 0 {
				return pe
			}
			d.poisoned = append(d.poisoned, poisonedEvent{id: ev.ID, typ: ev.Type, err: pe,
				header: change.Object{DB: strings.ToLower(ev.DB), Table: strings.ToLower(ev.Table)},
				heals:  poisonHeals(ev.ID, ev.Type, objs)})
			if message.IsTxnEvent(ev.Type) {
				// What it said is lost: the state no longer knows all.
				d.txns = append(d.txns, txnEvent{id: ev.ID, time: int64(ev.Time), at: len(d.changes), lost: true})
			}
			continue
		}
		kept := false
		for _, c := range descs[i] {
			if l.keep(c) {
				d.changes = append(d.changes, c)
				kept = true
			}
		}
		if kept {
			d.applied.add(eventTypeLabel(ev.Type), 1)
		} else {
			d.skipped.add(eventTypeLabel(ev.Type), 1)
		}
	}
	l.rec.decodedIn(time.Since(start))
	return nil
}

// healOutsideFilter is the failure of a batch whose heal the catalog's include
// and exclude patterns do not let through (a database refresh for a catalog that
// syncs some of its tables): deterministic and attributed to nothing, it heals
// the catalog.
func (l *catalogLoop) healOutsideFilter(poisoned []poisonedEvent) error {
	err := errors.New("the database refresh that would heal it is outside the catalog's include and exclude patterns")
	if len(poisoned) > 0 {
		p := poisoned[0]
		return &poisonError{eventID: p.id, eventType: p.typ, err: fmt.Errorf("%w (%v)", err, p.err)}
	}
	return &poisonError{err: err}
}

// attribute names the objects an undecodable event concerns (nil: none, or a
// decoder that cannot say).
func (l *catalogLoop) attribute(ev message.Event) []change.Object {
	if a, ok := l.cat.Decoder.(PoisonAttributor); ok {
		return a.Attribute(ev)
	}
	return nil
}

// decodeWorkers is how many goroutines decode a fetch (decodeAll). While the
// member has the next fetch in flight (draining a backlog), one: the fetch and
// the decode already keep two threads busy, and one core decodes a fetch faster
// than the metastore serves the next (against Hive 4.0.1, about 14 ms against
// 21 to 40 ms per 1,000 events). More goroutines there only take cores from
// what the sidecar shares its host with (the FE beside it; in the benchmarks
// the metastore and the other sidecars too): against Hive 4.0.1 they made the
// drains slower, and in process they cost CPU (BENCHMARKS.md). With nothing in flight (a burst of events in the steady state, the
// end of a drain), every core (maxDecoders): the decode is then all the member
// waits for.
func (l *catalogLoop) decodeWorkers(inFlight bool) int {
	if inFlight {
		return 1
	}
	return l.maxDecoders
}

// minEventsPerDecoder keeps small fetches on one goroutine: below it, starting
// goroutines costs more than it saves.
const minEventsPerDecoder = 64

// decodeAll decodes every event, spreading them over up to workers goroutines in
// contiguous runs: decoding (inflating gzip, scanning JSON) is most of a
// sidecar's CPU while it drains a backlog, and events decode independently. errs
// is nil when every event decoded, else each event's error.
func decodeAll(dec EventDecoder, evs []message.Event, workers int) (descs [][]change.Descriptor, errs []error) {
	descs = make([][]change.Descriptor, len(evs))
	errv := make([]error, len(evs))
	workers = max(1, min(workers, len(evs)/minEventsPerDecoder))
	run := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			descs[i], errv[i] = dec.Decode(evs[i])
		}
	}
	if workers == 1 {
		run(0, len(evs))
	} else {
		var wg sync.WaitGroup
		per := (len(evs) + workers - 1) / workers
		for lo := 0; lo < len(evs); lo += per {
			wg.Go(func() { run(lo, min(lo+per, len(evs))) })
		}
		wg.Wait()
	}
	for _, err := range errv {
		if err != nil {
			return descs, errv
		}
	}
	return descs, nil
}

// applyDecoded applies d as the batch (own, to], its poisoned events and the
// changes of objects being healed replaced by their heals (heal.go), and counts
// its events.
func (l *catalogLoop) applyDecoded(ctx context.Context, d *decoded, to int64) error {
	for _, p := range d.poisoned {
		l.rec.poisoned(p.typ)
	}
	l.lookBackIfDue(ctx)
	tp := l.txns.plan(l.cursor.Value(), d.txns, l.keep)
	if len(tp.unknown) > 0 {
		return l.refreshForUnknownCommits(ctx, d, tp, to)
	}
	changes, heals, needCatalog := l.heal.substitute(tp.changes(d.changes), d.poisoned, l.keep)
	if needCatalog {
		return l.healOutsideFilter(d.poisoned)
	}
	b := change.Batch{Catalog: l.cat.Name, From: l.cursor.Value(), To: to, Changes: changes}
	if err := l.applyBatch(ctx, b); err != nil {
		return err
	}
	l.heal.forget() // the batch is applied: what was planned for it is spent
	l.healed(heals)
	d.commitsApplied(tp.refreshing)
	l.rec.eventsCovered(d)
	l.txnsApplied(tp, to)
	return nil
}

// fullRefresh reloads the whole catalog on the FE (when apply) as of event id to.
func (l *catalogLoop) fullRefresh(ctx context.Context, reason string, to int64, apply bool) error {
	if apply {
		b := change.Batch{Catalog: l.cat.Name, From: l.cursor.Value(), To: to, FullRefresh: true}
		if err := l.applyBatch(ctx, b); err != nil {
			return err
		}
		// Counted only when this member refreshed its FE: a follower of a
		// cluster-scope dialect merely adopts the master's cursor.
		l.rec.fullRefreshed(reason)
		l.heal.forget() // the catalog is reloaded: nothing is left to heal
	}
	l.log.Info("full refresh", zap.String("reason", reason), zap.Int64("cursor", to), zap.Bool("applied", apply))
	l.cursor.refreshed()
	return nil
}

// applyBatch sends one batch to the FE and times it. The FE's requests are
// counted as the applier makes them (observeFERequest, handed to it with the
// call: applier.WithObserver).
func (l *catalogLoop) applyBatch(ctx context.Context, b change.Batch) error {
	kind := "changes"
	if b.FullRefresh {
		kind = "full_refresh"
	}
	start := time.Now()
	err := l.applier.Apply(applier.WithObserver(ctx, l.observeFERequest), b)
	l.progressed()
	l.rec.applyTook(kind, time.Since(start))
	if err != nil {
		ae := &applyError{from: b.From, to: b.To, full: b.FullRefresh, err: err}
		var fe *applier.Error
		if errors.As(err, &fe) {
			ae.objects = fe.Objects
		}
		return ae
	}
	l.cursor.sentTo(b.To)
	_, reports := l.applier.(AppliedReporter)
	l.rec.applied(b.To, reports) // the FE acknowledged the batch up to b.To
	return nil
}

// observeFERequest counts one request the applier sent to the FE for this
// catalog (a doris statement, a native batch) by its outcome.
func (l *catalogLoop) observeFERequest(_ string, err error) {
	l.progressed()
	result := "ok"
	if err != nil {
		result = classLabel(err)
	}
	l.rec.feRequest(result)
}

func (l *catalogLoop) callTimeout() time.Duration {
	if l.cat.CallTimeout > 0 {
		return l.cat.CallTimeout
	}
	return 30 * time.Second
}
