package agent

import (
	"time"

	"github.com/hmssync/hmssync/change"
)

// Self-heal by the smallest scope that holds a deterministic failure (SPEC §2).
// An event that cannot be decoded is attributed to the objects its header names
// (EventDecoder's Attribute); a statement or batch item the FE refuses to the
// objects the applier names (applier.Error.Objects). Such an object's changes in
// the batch are replaced by a refresh of just that object: REFRESH_TABLE for a
// table, REFRESH_DATABASE for a database. The batch is then applied as usual, so
// the cursor moves past the poison only once the heal was applied, and the events
// after it are applied normally. A heal the FE refuses too escalates one level:
// table, database, catalog (the cursor -1 and a full refresh, as for a failure
// nothing can be attributed to). Once a batch applied, the plan is spent: a later
// poison event of the same object starts at table scope again, however often it
// recurs (an object healed more than max_per_hour times in an hour is reported,
// not escalated).

// healScope is how much a heal refreshes.
type healScope int

const (
	healTable healScope = iota + 1
	healDatabase
	healCatalog
)

func (s healScope) String() string {
	switch s {
	case healTable:
		return "table"
	case healDatabase:
		return "database"
	case healCatalog:
		return "catalog"
	}
	return "none"
}

// maxHealPlan bounds the objects one batch may heal one by one; a batch failing
// on more is healed by the catalog's full refresh.
const maxHealPlan = 256

// maxHealHistory bounds the objects whose heals of the last hour are counted.
const maxHealHistory = 1024

// healer holds a catalog loop's heals in progress and the heals of the last hour.
// It is used by the loop's goroutine only.
type healer struct {
	maxPerHour int
	// plan is what the next batch heals instead of applying: a table
	// ({db, table}) or a database ({db, ""}), with why.
	plan map[change.Object]plannedHeal
	// recent are the times each object was healed in the last hour.
	recent map[change.Object][]time.Time
}

type plannedHeal struct {
	scope healScope
	err   string
}

// poisonedEvent is an event that could not be decoded, attributed to objects.
type poisonedEvent struct {
	id      int64
	typ     string
	objects []change.Object
	err     error
}

// healRecord is one heal a batch carries, reported once the batch is applied.
type healRecord struct {
	object    change.Object
	scope     healScope
	eventID   int64
	eventType string // the poison event's type; "" when the FE refused a change
	err       string
	at        time.Time
}

func newHealer(maxPerHour int) *healer {
	if maxPerHour <= 0 {
		maxPerHour = 6
	}
	return &healer{maxPerHour: maxPerHour}
}

// substitute returns the changes of a batch with every change of a planned
// object, and every poisoned event, replaced by that object's refresh (once per
// object, at its first change or event), and the heals that carries. kept is the
// catalog's filter: a heal of an object the catalog does not sync is dropped.
func (h *healer) substitute(changes []change.Descriptor, poisoned []poisonedEvent, kept func(change.Descriptor) bool) ([]change.Descriptor, []healRecord) {
	if len(h.plan) == 0 && len(poisoned) == 0 {
		return changes, nil
	}
	for _, p := range poisoned {
		for _, o := range p.objects {
			h.note(o, p.err.Error())
		}
	}
	s := substitution{h: h, kept: kept, emitted: map[change.Object]bool{}}
	s.out = make([]change.Descriptor, 0, len(changes)+len(poisoned))
	next := 0
	for _, c := range changes {
		for ; next < len(poisoned) && poisoned[next].id <= c.EventID; next++ {
			s.poison(poisoned[next])
		}
		if keys := h.covering(c); len(keys) > 0 {
			for _, key := range keys {
				s.heal(key, c.EventID, "")
			}
			continue
		}
		s.out = append(s.out, c)
	}
	for ; next < len(poisoned); next++ {
		s.poison(poisoned[next])
	}
	return s.out, s.records
}

// substitution is one batch being rewritten by substitute.
type substitution struct {
	h       *healer
	kept    func(change.Descriptor) bool
	emitted map[change.Object]bool
	out     []change.Descriptor
	records []healRecord
}

func (s *substitution) poison(p poisonedEvent) {
	for _, o := range p.objects {
		s.heal(s.h.key(o), p.id, p.typ)
	}
}

// heal adds the refresh of the planned object key, once.
func (s *substitution) heal(key change.Object, eventID int64, eventType string) {
	if s.emitted[key] {
		return
	}
	s.emitted[key] = true
	planned := s.h.plan[key]
	d := change.Descriptor{EventID: eventID, Op: change.RefreshTable, DB: key.DB, Table: key.Table}
	if planned.scope == healDatabase {
		d = change.Descriptor{EventID: eventID, Op: change.RefreshDatabase, DB: key.DB}
	}
	if !s.kept(d) {
		return
	}
	s.out = append(s.out, d)
	s.records = append(s.records, healRecord{object: key, scope: planned.scope, eventID: eventID, eventType: eventType, err: planned.err})
}

// note plans the heal of o at its narrowest scope, unless a wider one is planned.
func (h *healer) note(o change.Object, why string) {
	if h.plan == nil {
		h.plan = map[change.Object]plannedHeal{}
	}
	key := h.key(o)
	if _, ok := h.plan[key]; ok {
		return
	}
	scope := healTable
	if key.Table == "" {
		scope = healDatabase
	}
	h.plan[key] = plannedHeal{scope: scope, err: why}
}

// key is the plan's entry that covers o: its database's when the database is
// planned, else o itself.
func (h *healer) key(o change.Object) change.Object {
	if _, ok := h.plan[change.Object{DB: o.DB}]; ok {
		return change.Object{DB: o.DB}
	}
	return o
}

// covering lists the planned heals that cover change c (both sides of a rename).
func (h *healer) covering(c change.Descriptor) []change.Object {
	var keys []change.Object
	for _, o := range c.Objects() {
		if key := h.key(o); h.plan[key].scope != 0 {
			keys = append(keys, key)
		}
	}
	return keys
}

// escalate plans the heal of the objects the FE refused (why): each at table
// scope, or a level up when its heal was what the FE refused. It reports false
// when that leaves only the catalog: a refused database heal, or more objects
// than a batch heals one by one.
func (h *healer) escalate(objects []change.Object, why string) bool {
	if h.plan == nil {
		h.plan = map[change.Object]plannedHeal{}
	}
	for _, o := range objects {
		db := change.Object{DB: o.DB}
		switch {
		case h.plan[db].scope != 0:
			return false
		case o.Table == "":
			h.plan[db] = plannedHeal{scope: healDatabase, err: why}
		case h.plan[o].scope != 0:
			delete(h.plan, o)
			h.plan[db] = plannedHeal{scope: healDatabase, err: why}
		default:
			h.plan[o] = plannedHeal{scope: healTable, err: why}
		}
	}
	return len(h.plan) <= maxHealPlan
}

// forget drops the plan: the batch it was for is applied, or the catalog is
// healed by a full refresh instead.
func (h *healer) forget() { h.plan = nil }

// applied records heals that reached the FE at now and returns how often each
// object was healed in the last hour, and whether that is more than max_per_hour.
func (h *healer) applied(heals []healRecord, now time.Time) (counts []int, looping []bool) {
	h.forget()
	if h.recent == nil {
		h.recent = map[change.Object][]time.Time{}
	}
	for _, r := range heals {
		times := h.recent[r.object]
		for len(times) > 0 && now.Sub(times[0]) > time.Hour {
			times = times[1:]
		}
		if len(times) == 0 && len(h.recent) >= maxHealHistory {
			h.evictOldest()
		}
		// Bounded: beyond max_per_hour+1 only the count's excess matters.
		if len(times) > h.maxPerHour {
			times = times[1:]
		}
		times = append(times, now)
		h.recent[r.object] = times
		counts = append(counts, len(times))
		looping = append(looping, len(times) > h.maxPerHour)
	}
	return counts, looping
}

// looping lists the objects healed more than max_per_hour times in the hour
// before now.
func (h *healer) looping(now time.Time) []change.Object {
	var out []change.Object
	for o, times := range h.recent {
		n := 0
		for _, t := range times {
			if now.Sub(t) <= time.Hour {
				n++
			}
		}
		if n > h.maxPerHour {
			out = append(out, o)
		}
	}
	return out
}

func (h *healer) evictOldest() {
	var oldest change.Object
	var at time.Time
	for o, times := range h.recent {
		if last := times[len(times)-1]; at.IsZero() || last.Before(at) {
			oldest, at = o, last
		}
	}
	delete(h.recent, oldest)
}
