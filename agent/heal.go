package agent

import (
	"slices"
	"time"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms/message"
)

// Self-heal by the smallest scope that holds a deterministic failure (SPEC §2).
// An event that cannot be decoded is attributed to the objects its header names
// (PoisonAttributor) and replaced, in place in the batch, by its heal
// (poisonHeals): what the event would have meant where its type says so (a
// table or database created, dropped or renamed), else a REFRESH_TABLE or
// REFRESH_DATABASE of just that object; the other changes of the batch stay. A
// statement or batch item the FE refuses is attributed to the objects the
// applier names (applier.Error.Objects) and planned: the next attempt replaces
// that object's content changes by its refresh (at database scope, every table
// change of the database), keeping its name changes in place. The batch is then
// applied as usual, so the cursor moves past the poison only once the heal was
// applied. A heal the FE refuses too escalates one level: table, database,
// catalog (the cursor -1 and a full refresh, as for a failure nothing can be
// attributed to, or a heal the catalog's include/exclude patterns do not let
// through). Once a batch applied, the plan is spent: a later poison event of the
// same object starts at table scope again, however often it recurs (an object
// healed more than max_per_hour times in an hour is reported, not escalated).

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

// poisonedEvent is an event that could not be decoded, attributed to objects,
// and the changes that heal it (poisonHeals).
type poisonedEvent struct {
	id     int64
	typ    string
	header change.Object // the event header's names
	heals  []change.Descriptor
	err    error
}

// headerKept says whether the catalog syncs the table the event's header names.
func (p poisonedEvent) headerKept(kept func(change.Descriptor) bool) bool {
	return p.header.Table != "" && kept(change.Descriptor{Op: change.RefreshTable, DB: p.header.DB, Table: p.header.Table})
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

// substitute returns the changes of a batch with every poisoned event replaced,
// in place, by its heals (poisonHeals), and the changes of planned objects by
// that object's refresh, and the heals that carries. At table scope a table's
// content changes (refreshes, partition changes) give way to its REFRESH_TABLE
// while its name changes (register, unregister, rename) stay in place before
// it: a table refresh does not change the FE's list of tables. At database
// scope every table change of the database gives way to its REFRESH_DATABASE,
// which reloads that list; database name changes stay. kept is the catalog's
// filter: a heal of an object the catalog does not sync is dropped. needCatalog
// is true when a heal the failure needs cannot be sent (the filter keeps the
// event's table but not its database): only the catalog's refresh heals it.
func (h *healer) substitute(changes []change.Descriptor, poisoned []poisonedEvent, kept func(change.Descriptor) bool) (out []change.Descriptor, heals []healRecord, needCatalog bool) {
	if len(h.plan) == 0 && len(poisoned) == 0 {
		return changes, nil, false
	}
	s := substitution{h: h, kept: kept, emitted: map[change.Object]bool{}}
	s.out = make([]change.Descriptor, 0, len(changes)+len(poisoned))
	next := 0
	for _, c := range changes {
		for ; next < len(poisoned) && poisoned[next].id <= c.EventID; next++ {
			s.poison(poisoned[next])
		}
		s.change(c, "")
	}
	for ; next < len(poisoned); next++ {
		s.poison(poisoned[next])
	}
	return s.out, s.records, s.needCatalog
}

// substitution is one batch being rewritten by substitute.
type substitution struct {
	h           *healer
	kept        func(change.Descriptor) bool
	emitted     map[change.Object]bool
	out         []change.Descriptor
	records     []healRecord
	needCatalog bool
}

// change adds c, or the planned heals that replace it (eventType: the poison
// event's type when c is one's heal).
func (s *substitution) change(c change.Descriptor, eventType string) {
	keys := s.h.covering(c)
	if len(keys) == 0 {
		s.out = append(s.out, c)
		return
	}
	if !s.h.replaces(keys, c) {
		s.out = append(s.out, c)
	}
	for _, key := range keys {
		s.heal(key, c.EventID, eventType)
	}
}

// poison adds a poisoned event's heals, each as a change of the event, and
// records those no plan replaces.
func (s *substitution) poison(p poisonedEvent) {
	for _, d := range p.heals {
		if !s.kept(d) {
			if d.Op == change.RefreshDatabase && p.headerKept(s.kept) {
				s.needCatalog = true
			}
			continue
		}
		if len(s.h.covering(d)) > 0 {
			s.change(d, p.typ)
			continue
		}
		s.out = append(s.out, d)
		for _, o := range d.Objects() {
			s.records = append(s.records, healRecord{object: o, scope: scopeOf(o), eventID: p.id, eventType: p.typ, err: p.err.Error()})
		}
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
		// A heal that cannot be sent: only the catalog's refresh is left.
		s.needCatalog = true
		return
	}
	s.out = append(s.out, d)
	s.records = append(s.records, healRecord{object: key, scope: planned.scope, eventID: eventID, eventType: eventType, err: planned.err})
}

// replaces says whether the planned heals keys take c's place: a content change
// of a planned table, or any table change of a planned database.
func (h *healer) replaces(keys []change.Object, c change.Descriptor) bool {
	if c.Op.DatabaseLevel() {
		return false
	}
	for _, key := range keys {
		if h.plan[key].scope == healDatabase {
			return true
		}
	}
	switch c.Op {
	case change.RegisterTable, change.UnregisterTable, change.RenameTable:
		return false
	}
	return true
}

func scopeOf(o change.Object) healScope {
	if o.Table == "" {
		return healDatabase
	}
	return healTable
}

// poisonHeals are the changes that heal an event that could not be decoded,
// attributed to objs: what the event would have meant where its type says so
// (a table or database created, dropped or renamed: the FE's lists change too),
// else a refresh of each object.
func poisonHeals(id int64, typ string, objs []change.Object) []change.Descriptor {
	one := func(op change.Op, o change.Object) []change.Descriptor {
		return []change.Descriptor{{EventID: id, Op: op, DB: o.DB, Table: o.Table}}
	}
	if len(objs) == 1 && objs[0].Table == "" {
		switch typ {
		case message.EventCreateDatabase:
			return one(change.RegisterDatabase, objs[0])
		case message.EventDropDatabase:
			return one(change.UnregisterDatabase, objs[0])
		}
		return one(change.RefreshDatabase, objs[0])
	}
	switch {
	case typ == message.EventCreateTable && len(objs) == 1:
		return one(change.RegisterTable, objs[0])
	case typ == message.EventDropTable && len(objs) == 1:
		return one(change.UnregisterTable, objs[0])
	case typ == message.EventAlterTable && len(objs) == 2:
		// Attribute names the table after the change first, then the one
		// before it.
		return []change.Descriptor{{EventID: id, Op: change.RenameTable, DB: objs[1].DB, Table: objs[1].Table, DBAfter: objs[0].DB, TableAfter: objs[0].Table}}
	}
	var out []change.Descriptor
	for _, o := range objs {
		op := change.RefreshTable
		if o.Table == "" {
			op = change.RefreshDatabase
		}
		out = append(out, change.Descriptor{EventID: id, Op: op, DB: o.DB, Table: o.Table})
	}
	return out
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
	if len(h.plan) == 0 {
		return nil
	}
	var keys []change.Object
	for _, o := range c.Objects() {
		if key := h.key(o); h.plan[key].scope != 0 && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// escalate plans the heal of the objects the FE refused (why): each at table
// scope, or a level up when its heal was what the FE refused. It reports false
// when that leaves only the catalog: a refused database heal, a database heal
// the catalog's filter does not keep (kept), or more objects than a batch heals
// one by one.
func (h *healer) escalate(objects []change.Object, why string, kept func(change.Descriptor) bool) bool {
	if h.plan == nil {
		h.plan = map[change.Object]plannedHeal{}
	}
	for _, o := range objects {
		db := change.Object{DB: o.DB}
		database := o.Table == "" || h.plan[o].scope != 0
		switch {
		case h.plan[db].scope != 0:
			return false
		case database && !kept(change.Descriptor{Op: change.RefreshDatabase, DB: o.DB}):
			return false
		case database:
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
