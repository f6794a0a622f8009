package agent

import "github.com/hmssync/hmssync/change"

// keep applies the catalog's include and exclude patterns to one descriptor. The
// subject is "db.table", or "db." for database-level changes, so that a pattern
// such as `sales\..*` covers a database and all its tables. A rename is kept when
// either side is kept: moving a table out of scope must still unregister it, and
// moving one in must register it.
func (l *catalogLoop) keep(d change.Descriptor) bool {
	if len(l.cat.Include) == 0 && len(l.cat.Exclude) == 0 {
		return true
	}
	if l.subjectKept(d.DB, d.Table, d.Op.DatabaseLevel()) {
		return true
	}
	if d.Op == change.RenameTable || d.Op == change.RenameDatabase {
		db, t := d.DBAfter, d.TableAfter
		if db == "" {
			db = d.DB
		}
		if t == "" {
			t = d.Table
		}
		return l.subjectKept(db, t, d.Op.DatabaseLevel())
	}
	return false
}

func (l *catalogLoop) subjectKept(db, table string, dbLevel bool) bool {
	subject := db + "." + table
	if dbLevel {
		subject = db + "."
	}
	if len(l.cat.Include) > 0 {
		in := false
		for _, re := range l.cat.Include {
			if re.MatchString(subject) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	for _, re := range l.cat.Exclude {
		if re.MatchString(subject) {
			return false
		}
	}
	return true
}
