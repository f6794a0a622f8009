package hmstest

import (
	"context"
	"fmt"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
)

// Tables lists the tables of db, sorted; none for a database that does not
// exist (Hive's get_all_tables answers an empty list then, too).
func (s *Server) Tables(db string) []string {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	d := s.model.dbs[db]
	if d == nil {
		return []string{}
	}
	return sortedKeys(d.tables)
}

// PartitionNames lists the partition names of db.table ("k1=v1/k2=v2", escaped
// as Hive stores them), sorted as Hive orders them; ok is false if the table
// does not exist.
func (s *Server) PartitionNames(db, table string) (names []string, ok bool) {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	d := s.model.dbs[db]
	if d == nil {
		return nil, false
	}
	t := d.tables[table]
	if t == nil {
		return nil, false
	}
	return sortedKeys(t.partitions), true
}

func (h handler) GetAllTables(_ context.Context, db string) ([]string, error) {
	return h.s.Tables(db), nil
}

// GetPartitionNames answers like Hive: NoSuchObjectException for a missing
// table, at most maxParts names when maxParts is not negative.
func (h handler) GetPartitionNames(_ context.Context, db, table string, maxParts int16) ([]string, error) {
	names, ok := h.s.PartitionNames(db, table)
	if !ok {
		return nil, &hmsthrift.NoSuchObjectException{Message: fmt.Sprintf("%s.%s table not found", db, table)}
	}
	if maxParts >= 0 && int(maxParts) < len(names) {
		names = names[:maxParts]
	}
	return names, nil
}
