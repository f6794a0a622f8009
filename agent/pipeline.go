package agent

import (
	"context"
	"fmt"
	"slices"
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
		return 0, fmt.Errorf("read the metastore's current event id: %w", err)
	}
	l.setHMSCurrent(cur)
	return cur, nil
}

// fetch reads up to max events after the id after. With serverSkip the skip
// list goes to the metastore, which then counts only kept events towards max,
// and so, when the include patterns name the catalog's databases (l.pushDBs),
// does the database filter (push-down: the ids read are then bounded by the
// current id, not by max). Without serverSkip the metastore returns every
// event and the skipped ones are dropped here, so that max bounds the ids read
// (a follower must not read past the master cursor). Since l.pushDBs is fixed
// for the loop, serverSkip is all a read-ahead's key needs to say about this.
func (l *catalogLoop) fetch(ctx context.Context, after int64, max int, serverSkip bool) (hms.Fetch, error) {
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
	l.a.m.fetchSeconds.WithLabelValues(l.cat.Name).Observe(time.Since(start).Seconds())
	if err != nil {
		return f, fmt.Errorf("fetch up to %d events after %d from the metastore: %w", max, after, err)
	}
	l.a.m.pushdownDBs.WithLabelValues(l.cat.Name).Set(float64(f.Databases))
	var received typeCounts
	for _, ev := range f.Events {
		received.add(eventTypeLabel(ev.Type), 1)
	}
	for _, c := range received {
		l.a.m.eventsReceived.WithLabelValues(l.cat.Name, c.typ).Add(float64(c.n))
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

// applyEvents decodes and filters evs and applies them as one batch (l.own, to].
// An empty evs still sends an empty batch, so that an FE speaking the native
// protocol learns that its cursor moved past skipped events. apply=false only
// records the events as covered (never used for local scope).
func (l *catalogLoop) applyEvents(ctx context.Context, evs []message.Event, to int64, apply bool) error {
	var d decoded
	if err := l.decode(evs, &d, false); err != nil {
		return err
	}
	return l.applyDecoded(ctx, &d, to, apply)
}

// decoded is what events decoded to, ready to be applied as one batch. It holds
// the changes only, not the messages, so that the master can decode several
// fetches into one batch without keeping their messages in memory.
type decoded struct {
	changes []change.Descriptor
	// applied and skipped count the events that did and did not yield a
	// change by type, for the counters once the batch is applied.
	applied, skipped typeCounts
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

// decode decodes and filters evs into d, on one goroutine while another fetch
// is in flight (decodeWorkers). An event that cannot be decoded is a
// *poisonError (the first one in the log's order, if there are several).
func (l *catalogLoop) decode(evs []message.Event, d *decoded, inFlight bool) error {
	err := l.decodeUncounted(evs, d, inFlight)
	l.countPoison(err)
	return err
}

// countPoison counts the event a decode error (a *poisonError) names.
func (l *catalogLoop) countPoison(err error) {
	if p, ok := err.(*poisonError); ok {
		l.a.m.eventsFailed.WithLabelValues(l.cat.Name, eventTypeLabel(p.eventType)).Inc()
	}
}

// decodeUncounted is decode without counting a failure: a read-ahead's decode
// error is counted when the step meets it, not when a read-ahead that may be
// discarded does.
func (l *catalogLoop) decodeUncounted(evs []message.Event, d *decoded, inFlight bool) error {
	start := time.Now()
	descs, bad, err := decodeAll(l.cat.Decoder, evs, l.decodeWorkers(inFlight))
	if err != nil {
		ev := evs[bad]
		return &poisonError{eventID: ev.ID, eventType: ev.Type, err: err}
	}
	if d.changes == nil {
		d.changes = make([]change.Descriptor, 0, len(evs)) // about one change per event
	}
	for i, ev := range evs {
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
	l.a.m.decodeSeconds.WithLabelValues(l.cat.Name).Observe(time.Since(start).Seconds())
	return nil
}

// decodeWorkers is how many goroutines decode a fetch (decodeAll). While the
// member has the next fetch in flight (draining a backlog), one: the fetch and
// the decode already keep two threads busy, and one core decodes a fetch faster
// than the metastore serves the next (against Hive 4.0.1, about 14 ms against
// 21 to 40 ms per 1,000 events). More goroutines there only take cores from
// what the sidecar shares its host with (the FE beside it; in the benchmarks
// the metastore and the other sidecars too): against Hive 4.0.1 they made the
// drains slower, and in process they cost CPU (BENCHMARKS.md, the eighth
// session). With nothing in flight (a burst of events in the steady state, the
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
// sidecar's CPU while it drains a backlog, and events decode independently. On
// failure it returns the index of the first event in evs that failed, and its
// error.
func decodeAll(dec EventDecoder, evs []message.Event, workers int) ([][]change.Descriptor, int, error) {
	descs := make([][]change.Descriptor, len(evs))
	errs := make([]error, len(evs))
	workers = max(1, min(workers, len(evs)/minEventsPerDecoder))
	run := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if descs[i], errs[i] = dec.Decode(evs[i]); errs[i] != nil {
				return // later events of this run are not needed
			}
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
	for i, err := range errs {
		if err != nil {
			return nil, i, err
		}
	}
	return descs, -1, nil
}

// applyDecoded applies d as the batch (l.own, to] (when apply) and counts its
// events.
func (l *catalogLoop) applyDecoded(ctx context.Context, d *decoded, to int64, apply bool) error {
	if apply {
		b := change.Batch{Catalog: l.cat.Name, From: l.own, To: to, Changes: d.changes}
		if err := l.applyBatch(ctx, b); err != nil {
			return err
		}
	}
	for _, c := range d.applied {
		l.a.m.eventsApplied.WithLabelValues(l.cat.Name, c.typ).Add(float64(c.n))
	}
	for _, c := range d.skipped {
		l.a.m.eventsSkipped.WithLabelValues(l.cat.Name, c.typ).Add(float64(c.n))
	}
	return nil
}

// fullRefresh reloads the whole catalog on the FE (when apply) as of event id to.
func (l *catalogLoop) fullRefresh(ctx context.Context, reason string, to int64, apply bool) error {
	if reason == "" {
		reason = "initial"
	}
	if apply {
		b := change.Batch{Catalog: l.cat.Name, From: l.own, To: to, FullRefresh: true}
		if err := l.applyBatch(ctx, b); err != nil {
			return err
		}
		// Counted only when this member refreshed its FE: a follower of a
		// cluster-scope dialect merely adopts the master's cursor.
		l.a.m.fullRefreshes.WithLabelValues(l.cat.Name, reason).Inc()
		l.mu.Lock()
		l.st.fullRefreshes++
		l.mu.Unlock()
	}
	l.log.Info("full refresh", zap.String("reason", reason), zap.Int64("cursor", to), zap.Bool("applied", apply))
	l.refreshReason = ""
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
	err := l.a.cfg.Applier.Apply(applier.WithObserver(ctx, l.a.observeFERequest), b)
	l.progressed()
	l.a.m.applySeconds.WithLabelValues(l.cat.Name, kind).Observe(time.Since(start).Seconds())
	if err != nil {
		return &applyError{from: b.From, to: b.To, full: b.FullRefresh, err: err}
	}
	l.feSent = b.To
	l.mu.Lock()
	if _, ok := l.a.cfg.Applier.(AppliedReporter); ok {
		l.st.feApplied = b.To // the FE acknowledged the batch up to b.To
	}
	l.st.lastAppliedAt = time.Now()
	l.st.authFailing = false
	l.st.configFailing = false
	l.mu.Unlock()
	return nil
}

// observeFERequest counts one request the applier sent to the FE (a doris
// statement, a native batch) by its outcome.
func (a *Agent) observeFERequest(catalog string, err error) {
	a.progressedFE(catalog)
	result := "ok"
	if err != nil {
		result = classLabel(err)
	}
	a.m.feStatements.WithLabelValues(catalog, result).Inc()
}

func (l *catalogLoop) callTimeout() time.Duration {
	if l.cat.CallTimeout > 0 {
		return l.cat.CallTimeout
	}
	return 30 * time.Second
}
