package agent

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms/message"
)

// Unit tests of self-heal by the smallest scope (heal.go), through the ports.

// attributingDecoder is a memDecoder whose POISON events, and events of any type
// whose Format is "poison", cannot be decoded and are attributed as the
// production decoder attributes them: to the header's table (its database when
// the header names no table), and for a rename also to the table before it
// (which these tests carry in Message).
type attributingDecoder struct{}

func (attributingDecoder) Decode(ev message.Event) ([]change.Descriptor, error) {
	if ev.Format == "poison" {
		return nil, errors.New("poison")
	}
	return memDecoder{}.Decode(ev)
}

func (attributingDecoder) Attribute(ev message.Event) []change.Object {
	if ev.DB == "" {
		return nil
	}
	if ev.Table == "" || (ev.Type == message.EventAlterTable && ev.Message == "") {
		// No table, or an ALTER_TABLE whose old name cannot be read.
		return []change.Object{{DB: ev.DB}}
	}
	objs := []change.Object{{DB: ev.DB, Table: ev.Table}}
	if ev.Message != "" {
		objs = append(objs, change.Object{DB: ev.DB, Table: ev.Message})
	}
	return objs
}

// addEvent appends one event of typ naming db.table (old: a rename's old table).
func (m *memLog) addEvent(typ, db, table, old string) int64 {
	return m.addFormat(typ, "", db, table, old)
}

// addPoison appends an event of typ that cannot be decoded.
func (m *memLog) addPoison(typ, db, table, old string) int64 {
	return m.addFormat(typ, "poison", db, table, old)
}

func (m *memLog) addFormat(typ, format, db, table, old string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.current() + 1
	m.events = append(m.events, message.Event{ID: id, Type: typ, Format: format, DB: db, Table: table, Message: old})
	return id
}

// appliedChanges lists every change the FE applied outside full refreshes, as
// "OP db.table@event".
func (f *memFE) appliedChanges() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, b := range f.batches {
		for _, c := range b.Changes {
			s := fmt.Sprintf("%s %s.%s@%d", c.Op, c.DB, c.Table, c.EventID)
			if c.Op == change.RenameTable {
				s = fmt.Sprintf("%s %s.%s>%s.%s@%d", c.Op, c.DB, c.Table, c.DBAfter, c.TableAfter, c.EventID)
			}
			out = append(out, s)
		}
	}
	return out
}

// healRig is a member whose cursor and the committed one are at 5, over a log
// of five good events, ready to meet what a test appends.
func healRig(t *testing.T, scope applier.Scope, member string, o rigOpts) (*rig, *memLog) {
	log := &memLog{}
	log.add("ALTER_TABLE", 5)
	store := newMemStore()
	store.commitAs(5, 0)
	seedMember(store, member, 5, 0)
	o.scope, o.member, o.decoder = scope, member, attributingDecoder{}
	r := newRig(t, log, store, o)
	if member == "m0" {
		r.becomeMaster()
	}
	return r, log
}

// runHealing steps as the loop does, failures included (failed decides what the
// next step does), until the member waits.
func (r *rig) runHealing(n int) {
	r.t.Helper()
	bo := newBackoff(r.l.retry)
	for range n {
		r.showCommitted()
		out, err := r.step()
		if err != nil {
			if classify(err) != classDeterministic {
				r.t.Fatalf("step: %v", err)
			}
			r.l.failed(err, bo)
			continue
		}
		if out != again {
			return
		}
	}
	r.t.Fatalf("still stepping after %d steps", n)
}

func (r *rig) heals(scope string) float64 {
	return metricValue(r.a.m.selfHeals.WithLabelValues("hive", scope))
}

// An undecodable ALTER_PARTITION of db.bad among good events costs one refresh
// of db.bad: no catalog refresh, every good event after it applied, the cursor
// past it — for a master and a follower, with either scope.
func TestPoisonEventRefreshesItsTableOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scope  applier.Scope
		member string
	}{{applier.ScopeLocal, "m0"}, {applier.ScopeCluster, "m0"}, {applier.ScopeLocal, "f"}} {
		t.Run(fmt.Sprintf("%s/%s", tc.scope, tc.member), func(t *testing.T) {
			t.Parallel()
			r, log := healRig(t, tc.scope, tc.member, rigOpts{})
			log.add("ALTER_PARTITION", 2) // 6, 7
			poison := log.addEvent("POISON", "db", "bad", "")
			log.add("ALTER_PARTITION", 3) // 9-11
			if tc.member != "m0" {
				r.store.commitAs(11, 0)
			}
			r.runHealing(10)

			if n := r.fe.refreshes(); n != 0 {
				t.Fatalf("%d full refreshes; want none: the poison concerns db.bad only", n)
			}
			got := r.fe.appliedChanges()
			want := []string{"REFRESH_TABLE db.t6@6", "REFRESH_TABLE db.t7@7", fmt.Sprintf("REFRESH_TABLE db.bad@%d", poison),
				"REFRESH_TABLE db.t9@9", "REFRESH_TABLE db.t10@10", "REFRESH_TABLE db.t11@11"}
			if !slices.Equal(got, want) {
				t.Fatalf("the FE applied %v; want %v (the poison replaced by one refresh of its table, in place)", got, want)
			}
			if c := r.l.cursor.Value(); c != 11 {
				t.Fatalf("cursor %d; want 11, past the poison", c)
			}
			if v := r.heals("table"); v != 1 {
				t.Fatalf("hmssync_self_heals_total{scope=table} = %v; want 1", v)
			}
			if v := r.heals("catalog"); v != 0 {
				t.Fatalf("hmssync_self_heals_total{scope=catalog} = %v; want 0", v)
			}
			st := r.a.Status().Catalogs[0]
			if len(st.LastHeals) != 1 || st.LastHeals[0].Object != "db.bad" || st.LastHeals[0].Scope != "table" ||
				st.LastHeals[0].EventID != poison || st.LastHeals[0].EventType != "POISON" || st.LastHeals[0].Error == "" {
				t.Fatalf("/status last heals %+v; want one table heal of db.bad at event %d (POISON) with its error", st.LastHeals, poison)
			}
		})
	}
}

// An undecodable event nothing can be attributed to still heals the catalog.
func TestUnattributablePoisonRefreshesTheCatalog(t *testing.T) {
	t.Parallel()
	r, log := healRig(t, applier.ScopeLocal, "m0", rigOpts{})
	log.addEvent("POISON", "", "", "") // 6: no header
	log.add("ALTER_PARTITION", 2)
	r.runHealing(10)
	if n := r.fe.refreshes(); n != 1 {
		t.Fatalf("%d full refreshes; want one: nothing names what the poison concerns", n)
	}
	if v := r.heals("catalog"); v != 1 {
		t.Fatalf("hmssync_self_heals_total{scope=catalog} = %v; want 1", v)
	}
	r.checkFEHoldsLog(5, nil)
}

// rejectingFE refuses every batch holding a change of one of its objects, naming
// them as an FE does (applier.Error.Objects), and records what it was sent.
type rejectingFE struct {
	mu      sync.Mutex
	refuse  map[change.Object]bool
	refused [][]string // each refused batch's changes
}

func (f *rejectingFE) check(b change.Batch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var objs []change.Object
	var sent []string
	for _, c := range b.Changes {
		sent = append(sent, fmt.Sprintf("%s %s.%s", c.Op, c.DB, c.Table))
		for _, o := range c.Objects() {
			if f.refuse[o] && !slices.Contains(objs, o) {
				objs = append(objs, o)
			}
		}
	}
	if len(objs) == 0 {
		return nil
	}
	f.refused = append(f.refused, sent)
	return &applier.Error{Class: applier.Deterministic, Objects: objs, Err: errors.New("statement rejected")}
}

// An FE that refuses a table's changes, and then its refresh, gets the table's
// database refreshed; refusing that too, the catalog.
func TestRefusedHealEscalatesToTheDatabaseThenTheCatalog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		refuse     []change.Object
		refreshes  int
		wantScope  string
		wantRefuse int
	}{
		{"database heals it", []change.Object{{DB: "db", Table: "bad"}}, 0, "database", 2},
		{"catalog heals it", []change.Object{{DB: "db", Table: "bad"}, {DB: "db"}}, 1, "catalog", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, log := healRig(t, applier.ScopeLocal, "m0", rigOpts{})
			fe := &rejectingFE{refuse: map[change.Object]bool{}}
			for _, o := range tc.refuse {
				fe.refuse[o] = true
			}
			r.fe.beforeApply = fe.check
			log.add("ALTER_PARTITION", 1)                    // 6
			log.addEvent("ALTER_PARTITION", "db", "bad", "") // 7: decodes, the FE refuses it
			log.add("ALTER_PARTITION", 1)                    // 8
			r.runHealing(10)

			if len(fe.refused) != tc.wantRefuse {
				t.Fatalf("the FE refused %d batches %v; want %d", len(fe.refused), fe.refused, tc.wantRefuse)
			}
			if !slices.Contains(fe.refused[1], "REFRESH_TABLE db.bad") || !slices.Contains(fe.refused[1], "REFRESH_TABLE db.t6") {
				t.Fatalf("second attempt %v; want db.bad's change replaced by its table refresh, the others kept", fe.refused[1])
			}
			if n := r.fe.refreshes(); n != tc.refreshes {
				t.Fatalf("%d full refreshes; want %d", n, tc.refreshes)
			}
			if v := r.heals(tc.wantScope); v != 1 {
				t.Fatalf("hmssync_self_heals_total{scope=%s} = %v; want 1", tc.wantScope, v)
			}
			if tc.wantScope == "database" {
				if got, want := r.fe.appliedChanges(), []string{"REFRESH_DATABASE db.@6"}; !slices.Equal(got, want) {
					t.Fatalf("the FE applied %v; want %v (every change of the database replaced by one refresh of it)", got, want)
				}
			}
			if c := r.store.cursor; c != 8 {
				t.Fatalf("committed %d; want 8, past the refused change", c)
			}
		})
	}
}

// An undecodable rename heals both names: the FE is told the rename (its list of
// tables changes too), and a table created or dropped by an undecodable event is
// registered or unregistered, not merely refreshed. Good name changes of the
// same batch stay as they are.
func TestPoisonRenameRefreshesBothNames(t *testing.T) {
	t.Parallel()
	r, log := healRig(t, applier.ScopeLocal, "m0", rigOpts{})
	rename := log.addPoison(message.EventAlterTable, "db", "new", "old")
	create := log.addPoison(message.EventCreateTable, "db", "c", "")
	drop := log.addPoison(message.EventDropTable, "db", "d", "")
	r.runHealing(10)
	want := []string{fmt.Sprintf("RENAME_TABLE db.old>db.new@%d", rename), fmt.Sprintf("REGISTER_TABLE db.c@%d", create), fmt.Sprintf("UNREGISTER_TABLE db.d@%d", drop)}
	if got := r.fe.appliedChanges(); !slices.Equal(got, want) || r.fe.refreshes() != 0 {
		t.Fatalf("the FE applied %v and %d full refreshes; want %v and none", got, r.fe.refreshes(), want)
	}
}

// A heal the catalog's include patterns do not let through (a database refresh
// for a catalog that syncs one of its tables) is not silently dropped: the
// catalog is refreshed, and nothing is left planned to drop later changes.
func TestHealOutsideTheFilterRefreshesTheCatalog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(r *rig, log *memLog)
	}{
		{"a poison ALTER_TABLE without its old name", func(r *rig, log *memLog) {
			log.addPoison(message.EventAlterTable, "db", "bad", "") // attributed to db
		}},
		{"the FE refusing the table and its heal", func(r *rig, log *memLog) {
			fe := &rejectingFE{refuse: map[change.Object]bool{{DB: "db", Table: "bad"}: true}}
			r.fe.beforeApply = fe.check
			log.addEvent("ALTER_PARTITION", "db", "bad", "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, log := healRig(t, applier.ScopeLocal, "m0", rigOpts{})
			r.l.cat.Include = []*regexp.Regexp{regexp.MustCompile(`^(?:db\.bad)$`)}
			tc.setup(r, log)
			r.runHealing(10)
			if n := r.fe.refreshes(); n != 1 {
				t.Fatalf("%d full refreshes; want one: the database heal is outside the include patterns", n)
			}
			r.fe.beforeApply = nil
			good := log.addEvent("ALTER_PARTITION", "db", "bad", "")
			r.runHealing(10)
			if got := r.fe.appliedChanges(); !slices.Contains(got, fmt.Sprintf("REFRESH_TABLE db.bad@%d", good)) {
				t.Fatalf("a later good event of db.bad was not applied (%v): a heal plan outlived its batch", got)
			}
		})
	}
}

// A table whose events keep failing is healed at table scope each time, never
// escalated, and reported once it was healed more than max_per_hour times.
func TestRecurringPoisonIsReportedNotEscalated(t *testing.T) {
	t.Parallel()
	r, log := healRig(t, applier.ScopeLocal, "m0", rigOpts{healsPerHour: 2})
	for i := range 3 {
		log.addEvent("POISON", "db", "bad", "")
		r.runHealing(10)
		st := r.a.Status().Catalogs[0]
		looping := slices.Contains(st.HealLoops, "db.bad")
		if looping != (i == 2) {
			t.Fatalf("after heal %d: heal loops %v; want db.bad listed only after the third (max_per_hour 2)", i+1, st.HealLoops)
		}
		for _, why := range r.a.notReady() {
			if strings.Contains(why, "heal") || strings.Contains(why, "db.bad") {
				t.Fatalf("/readyz not ready for a looping heal: %v", why)
			}
		}
	}
	if v := r.heals("table"); v != 3 {
		t.Fatalf("hmssync_self_heals_total{scope=table} = %v; want 3", v)
	}
	if n := r.fe.refreshes(); n != 0 {
		t.Fatalf("%d full refreshes; want none: a recurring poison is still healed at table scope", n)
	}
	if v := metricValue(r.a.m.selfHealLoops.WithLabelValues("hive")); v != 1 {
		t.Fatalf("hmssync_self_heal_loops = %v; want 1", v)
	}
}
