package fetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hmssync/hmssync/change"
)

// Truth is a metastore's content: database -> table -> sorted partition names
// (an unpartitioned table has none).
type Truth = map[string]map[string][]string

// ErrUnknownCatalog may be wrapped by a Loader's error to say the catalog does not
// exist; the FE then answers as Doris does for an unknown catalog.
var ErrUnknownCatalog = errors.New("unknown catalog")

// model is what an FE's caches hold, per catalog, plus everything the FE
// received. A Doris-like cluster shares one model between its endpoints, because
// a REFRESH sent to any Doris FE is replayed on every FE.
type model struct {
	loader func(ctx context.Context, catalog string) (Truth, error)

	mu         sync.Mutex
	catalogs   map[string]*catalogCache // present = initialised
	applied    map[string]int64         // native: last to_event_id applied
	statements []string
	changes    []ReceivedBatch
	// altered holds the catalog properties ALTER CATALOG set (catalogs.go),
	// shared by a cluster's endpoints as Doris replicates DDL.
	altered map[string]map[string]string
}

type catalogCache struct {
	dbs       map[string]*dbCache
	refreshed time.Time
}

type dbCache struct {
	tables    map[string]*tableCache
	refreshed time.Time
}

type tableCache struct {
	partitions []string // sorted
	refreshed  time.Time
}

// ReceivedBatch is a native batch as the FE received it.
type ReceivedBatch struct {
	Catalog string `json:"catalog"`
	change.Batch
}

func newModel(loader func(context.Context, string) (Truth, error)) *model {
	return &model{loader: loader, catalogs: map[string]*catalogCache{}, applied: map[string]int64{}}
}

// sqlError is an answer of Doris's SQL executor: an envelope code and text.
type sqlError struct {
	code int
	msg  string
}

func (e *sqlError) Error() string { return e.msg }

func failed(format string, args ...any) *sqlError {
	return &sqlError{code: 1, msg: "Failed to execute sql: errCode = 2, detailMessage = " + fmt.Sprintf(format, args...)}
}

// load asks the loader for catalog's truth; ok is false without a loader.
func (m *model) load(ctx context.Context, catalog string) (Truth, bool, *sqlError) {
	if m.loader == nil {
		return nil, false, nil
	}
	t, err := m.loader(ctx, catalog)
	if errors.Is(err, ErrUnknownCatalog) {
		return nil, false, failed("Unknown catalog '%s'", catalog)
	}
	if err != nil {
		return nil, false, failed("failed to load catalog %s from the metastore: %v", catalog, err)
	}
	return t, true, nil
}

// catalog returns catalog's cache, initialising it on first use as Doris does:
// lazily, from the metastore (empty without a loader).
func (m *model) catalog(ctx context.Context, name string) (*catalogCache, *sqlError) {
	if c := m.catalogs[name]; c != nil {
		return c, nil
	}
	truth, _, err := m.load(ctx, name)
	if err != nil {
		return nil, err
	}
	c := &catalogCache{dbs: map[string]*dbCache{}, refreshed: time.Now()}
	c.reload(truth, true)
	m.catalogs[name] = c
	return c, nil
}

// reload makes the catalog's name lists those of truth. With invalidate every
// table is reloaded; without, tables already cached keep their partitions (what
// invalid_cache=false means) and only new tables are loaded.
func (c *catalogCache) reload(truth Truth, invalidate bool) {
	now := time.Now()
	dbs := map[string]*dbCache{}
	for db, tables := range truth {
		old := c.dbs[db]
		if old == nil {
			old = &dbCache{tables: map[string]*tableCache{}}
		}
		old.reload(tables, invalidate, now)
		dbs[db] = old
	}
	c.dbs = dbs
	c.refreshed = now
}

func (d *dbCache) reload(tables map[string][]string, invalidate bool, now time.Time) {
	fresh := map[string]*tableCache{}
	for t, parts := range tables {
		if old := d.tables[t]; old != nil && !invalidate {
			fresh[t] = old
			continue
		}
		fresh[t] = &tableCache{partitions: sortedCopy(parts), refreshed: now}
	}
	d.tables = fresh
	d.refreshed = now
}

func sortedCopy(p []string) []string {
	out := append([]string{}, p...)
	slices.Sort(out)
	return slices.Compact(out)
}

// execute runs a parsed statement against the model.
func (m *model) execute(ctx context.Context, st Statement) *sqlError {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.Kind == SelectOne {
		return nil
	}
	if st.Catalog == "" {
		// The session catalog of /api/query is the internal one, whose
		// tables have no cache to refresh.
		return failed("%s is only supported for external catalogs; the session catalog is internal, qualify the name with a catalog", st.Kind)
	}
	truth, haveTruth, err := m.load(ctx, st.Catalog)
	if err != nil {
		return err
	}
	c, err := m.catalog(ctx, st.Catalog)
	if err != nil {
		return err
	}
	now := time.Now()
	switch st.Kind {
	case RefreshCatalog:
		if haveTruth {
			c.reload(truth, st.InvalidCache())
		} else {
			c.refreshed = now
		}
	case RefreshDatabase:
		if haveTruth {
			tables, ok := truth[st.DB]
			if !ok {
				return failed("Database [%s] does not exist in catalog [%s].", st.DB, st.Catalog)
			}
			// A database missing from the cached list is found (and
			// refreshed) on demand, but the list itself is not reloaded.
			if d := c.dbs[st.DB]; d != nil {
				d.reload(tables, st.InvalidCache(), now)
			}
		} else if d := c.dbs[st.DB]; d != nil {
			d.refreshed = now
		}
	case RefreshTable:
		if haveTruth {
			tables, ok := truth[st.DB]
			if !ok {
				return failed("Database [%s] does not exist in catalog [%s].", st.DB, st.Catalog)
			}
			parts, ok := tables[st.Table]
			if !ok {
				return failed("Table [%s] does not exist in database [%s].", st.Table, st.DB)
			}
			if t := c.table(st.DB, st.Table); t != nil {
				t.partitions, t.refreshed = sortedCopy(parts), now
			}
		} else if t := c.table(st.DB, st.Table); t != nil {
			t.refreshed = now
		}
	}
	return nil
}

func (c *catalogCache) table(db, table string) *tableCache {
	if d := c.dbs[db]; d != nil {
		return d.tables[table]
	}
	return nil
}

// applyBatch applies a native batch. It returns whether anything was applied
// and the catalog's applied event id afterwards.
//
// Idempotency: a batch whose to_event_id is at most the last applied one is
// acknowledged without applying; in a batch that overlaps, descriptors with an
// event id at most the last applied one are skipped. A full refresh is always
// applied and sets the applied id to its to_event_id even when that is lower,
// because that is how a reset HMS log (new ids start low) is announced.
func (m *model) applyBatch(ctx context.Context, catalog string, b change.Batch) (bool, int64, *sqlError) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.applied[catalog]
	if !ok {
		last = -1
	}
	if b.FullRefresh {
		truth, haveTruth, err := m.load(ctx, catalog)
		if err != nil {
			return false, last, err
		}
		c, err := m.catalog(ctx, catalog)
		if err != nil {
			return false, last, err
		}
		if haveTruth {
			c.reload(truth, true)
		} else {
			c.refreshed = time.Now()
		}
		m.applied[catalog] = b.To
		return true, b.To, nil
	}
	if b.To <= last {
		return false, last, nil
	}
	c, err := m.catalog(ctx, catalog)
	if err != nil {
		return false, last, err
	}
	for _, d := range b.Changes {
		if d.EventID > last {
			m.applyDescriptor(ctx, catalog, c, d)
		}
	}
	m.applied[catalog] = b.To
	return true, b.To, nil
}

// applyDescriptor changes the cache exactly as d says. Objects the cache does
// not hold are left alone: an FE only tracks what its name lists show.
func (m *model) applyDescriptor(ctx context.Context, catalog string, c *catalogCache, d change.Descriptor) {
	now := time.Now()
	switch d.Op {
	case change.RegisterDatabase:
		c.dbs[d.DB] = &dbCache{tables: map[string]*tableCache{}, refreshed: now}
	case change.UnregisterDatabase:
		delete(c.dbs, d.DB)
	case change.RenameDatabase:
		// A rename is a hint, not a fact: Hive 3.1 logs ALTER_DATABASE with a new
		// name it never applies. With a metastore to ask, the FE re-reads both
		// names' table lists (keeping the caches of tables that remain, as
		// invalid_cache=false does); without one it moves the entry.
		if truth, ok, err := m.load(ctx, catalog); ok && err == nil {
			moved := c.dbs[d.DB]
			if _, stayed := truth[d.DB]; stayed {
				moved = nil
			}
			for _, name := range []string{d.DB, d.DBAfter} {
				tables, exists := truth[name]
				if !exists {
					delete(c.dbs, name)
					continue
				}
				db := c.dbs[name]
				if db == nil && name == d.DBAfter {
					db = moved
				}
				if db == nil {
					db = &dbCache{tables: map[string]*tableCache{}}
				}
				db.reload(tables, false, now)
				c.dbs[name] = db
			}
			return
		}
		if db := c.dbs[d.DB]; db != nil {
			delete(c.dbs, d.DB)
			db.refreshed = now
			c.dbs[d.DBAfter] = db
		}
	case change.RefreshDatabase:
		// A heal of the database: the FE reloads its table list and every
		// table's caches from the metastore, loading a database it did not
		// list and forgetting one the metastore no longer has. Without a
		// metastore to ask it marks the cached tables reloaded.
		if truth, ok, err := m.load(ctx, catalog); ok && err == nil {
			tables, exists := truth[d.DB]
			if !exists {
				delete(c.dbs, d.DB)
				return
			}
			db := c.dbs[d.DB]
			if db == nil {
				db = &dbCache{tables: map[string]*tableCache{}}
				c.dbs[d.DB] = db
			}
			db.reload(tables, true, now)
			return
		}
		if db := c.dbs[d.DB]; db != nil {
			db.refreshed = now
			for _, t := range db.tables {
				t.refreshed = now
			}
		}
	case change.RegisterTable:
		if db := c.dbs[d.DB]; db != nil {
			db.tables[d.Table] = &tableCache{partitions: []string{}, refreshed: now}
		}
	case change.UnregisterTable:
		if db := c.dbs[d.DB]; db != nil {
			delete(db.tables, d.Table)
		}
	case change.RenameTable:
		from, to := c.dbs[d.DB], c.dbs[d.DBAfter]
		if from == nil || from.tables[d.Table] == nil {
			return
		}
		t := from.tables[d.Table]
		delete(from.tables, d.Table)
		if to != nil {
			t.refreshed = now
			to.tables[d.TableAfter] = t
		}
	case change.RefreshTable:
		// The table's own metadata changed (ALTER TABLE, an insert into an
		// unpartitioned table): the FE drops its caches and reloads.
		t := c.table(d.DB, d.Table)
		if t == nil {
			return
		}
		t.refreshed = now
		if truth, ok, err := m.load(ctx, catalog); ok && err == nil {
			if parts, ok := truth[d.DB][d.Table]; ok {
				t.partitions = sortedCopy(parts)
			}
		}
	case change.AddPartitions:
		if t := c.table(d.DB, d.Table); t != nil {
			t.partitions = sortedCopy(append(t.partitions, d.Partitions...))
			t.refreshed = now
		}
	case change.DropPartitions:
		if t := c.table(d.DB, d.Table); t != nil {
			t.partitions = slices.DeleteFunc(t.partitions, func(p string) bool { return slices.Contains(d.Partitions, p) })
			t.refreshed = now
		}
	case change.RefreshPartitions:
		// Partition files changed; the names, which the model holds, did not.
		if t := c.table(d.DB, d.Table); t != nil {
			t.refreshed = now
		}
	}
}

// snapshot returns a copy of what catalog's cache holds; nil if it was never
// initialised.
func (m *model) snapshot(catalog string) Truth {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.catalogs[catalog]
	if c == nil {
		return nil
	}
	out := Truth{}
	for db, d := range c.dbs {
		tables := map[string][]string{}
		for t, tc := range d.tables {
			tables[t] = append([]string{}, tc.partitions...)
		}
		out[db] = tables
	}
	return out
}

func (m *model) appliedEventID(catalog string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.applied[catalog]; ok {
		return id
	}
	return -1
}

func (m *model) setCache(catalog string, truth Truth) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &catalogCache{dbs: map[string]*dbCache{}}
	c.reload(truth, true)
	m.catalogs[catalog] = c
}

// restart forgets every cache and applied id, as an FE restart does; the
// request logs are kept.
func (m *model) restart() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.catalogs = map[string]*catalogCache{}
	m.applied = map[string]int64{}
}

func (m *model) recordStatement(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.statements = append(m.statements, s)
}

func (m *model) recordBatch(b ReceivedBatch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changes = append(m.changes, b)
}
