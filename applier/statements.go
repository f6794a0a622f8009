package applier

import "github.com/hmssync/hmssync/change"

// noCacheInvalidation keeps partition and file caches: a name-list refresh is
// all that registering, dropping or renaming an object needs.
const noCacheInvalidation = ` PROPERTIES("invalid_cache"="false")`

// DorisStatements returns the smallest set of REFRESH statements (SPEC §5) that
// brings a Doris FE's caches of catalog up to date with b, in the order they
// must be sent: catalog, then databases, then tables. b.Catalog is not used.
// Descriptors that fail Validate are ignored here; Apply rejects them.
//
//   - A full refresh is REFRESH CATALOG and nothing else.
//   - Any database op makes one REFRESH CATALOG ... invalid_cache=false, which
//     also reloads every database's table list, so no name-list REFRESH
//     DATABASE follows.
//   - Otherwise each database where a table was registered, dropped or renamed
//     (both sides of a rename) gets one REFRESH DATABASE ... invalid_cache=false.
//   - Each database named by REFRESH_DATABASE gets one REFRESH DATABASE without
//     properties, which reloads its table list and invalidates every cache in
//     it, so it replaces that database's name-list refresh and its tables'
//     REFRESH TABLE. It is skipped if the batch drops the database later, and
//     follows a database rename to the new name.
//   - Each table that was registered, renamed to, refreshed or had partitions
//     changed gets one REFRESH TABLE, unless the batch drops it later (a drop
//     or rename of the table, a drop of its database). A rename carries the
//     table's pending refresh to the new name; so does a database rename.
//
// Databases and tables appear in the order they were first mentioned.
func DorisStatements(catalog string, b change.Batch) []string {
	stmts := dorisStatements(catalog, b)
	if stmts == nil {
		return nil
	}
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = s.sql
	}
	return out
}

// statement is one SQL statement and the objects it concerns: its table, its
// database, or nil for the catalog.
type statement struct {
	sql     string
	objects []change.Object
}

// dorisStatements is DorisStatements with each statement's object beside it.
func dorisStatements(catalog string, b change.Batch) []statement {
	if b.FullRefresh {
		return []statement{{sql: "REFRESH CATALOG " + quoteIdent(catalog)}}
	}
	var (
		catalogNames bool
		dbs          orderedSet[string] // name-list refreshes
		healDBs      orderedSet[string] // REFRESH_DATABASE: reload and invalidate
		tables       orderedSet[tableName]
	)
	for _, d := range b.Changes {
		if d.Validate() != nil {
			continue
		}
		t := tableName{d.DB, d.Table}
		switch d.Op {
		case change.RegisterDatabase:
			catalogNames = true
		case change.UnregisterDatabase:
			catalogNames = true
			healDBs.remove(d.DB)
			tables.removeIf(func(x tableName) bool { return x.db == d.DB })
		case change.RenameDatabase:
			catalogNames = true
			if healDBs.has(d.DB) {
				healDBs.remove(d.DB)
				healDBs.add(d.DBAfter)
			}
			for _, x := range tables.items() {
				if x.db == d.DB {
					tables.remove(x)
					tables.add(tableName{d.DBAfter, x.table})
				}
			}
		case change.RefreshDatabase:
			healDBs.add(d.DB)
		case change.RegisterTable:
			dbs.add(d.DB)
			tables.add(t)
		case change.UnregisterTable:
			dbs.add(d.DB)
			tables.remove(t)
		case change.RenameTable:
			dbs.add(d.DB)
			dbs.add(d.DBAfter)
			tables.remove(t)
			tables.add(tableName{d.DBAfter, d.TableAfter})
		case change.RefreshTable, change.AddPartitions, change.DropPartitions, change.RefreshPartitions:
			tables.add(t)
		}
	}
	var out []statement
	if catalogNames {
		out = append(out, statement{sql: "REFRESH CATALOG " + quoteIdent(catalog) + noCacheInvalidation})
	} else {
		for _, db := range dbs.items() {
			if !healDBs.has(db) {
				out = append(out, statement{
					sql:     "REFRESH DATABASE " + qualified(catalog, db) + noCacheInvalidation,
					objects: []change.Object{{DB: db}},
				})
			}
		}
	}
	for _, db := range healDBs.items() {
		out = append(out, statement{sql: "REFRESH DATABASE " + qualified(catalog, db), objects: []change.Object{{DB: db}}})
	}
	for _, t := range tables.items() {
		if !healDBs.has(t.db) {
			out = append(out, statement{
				sql:     "REFRESH TABLE " + qualified(catalog, t.db, t.table),
				objects: []change.Object{{DB: t.db, Table: t.table}},
			})
		}
	}
	return out
}

type tableName struct{ db, table string }

// orderedSet keeps members in the order they were first added; a removed and
// re-added member keeps its first position, so the output order only depends on
// first mention.
type orderedSet[T comparable] struct {
	order   []T
	present map[T]bool
}

func (s *orderedSet[T]) add(v T) {
	if s.present == nil {
		s.present = map[T]bool{}
	}
	if _, seen := s.present[v]; !seen {
		s.order = append(s.order, v)
	}
	s.present[v] = true
}

func (s *orderedSet[T]) has(v T) bool { return s.present[v] }

func (s *orderedSet[T]) remove(v T) {
	if s.present[v] {
		s.present[v] = false
	}
}

func (s *orderedSet[T]) removeIf(f func(T) bool) {
	for _, v := range s.order {
		if f(v) {
			s.remove(v)
		}
	}
}

func (s *orderedSet[T]) items() []T {
	var out []T
	for _, v := range s.order {
		if s.present[v] {
			out = append(out, v)
		}
	}
	return out
}
