package hmstest

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hmssync/hmssync/hms/message"
)

// Errors of the mutations, for errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
)

// Table describes a table to create.
type Table struct {
	DB, Name string
	// Columns are the data columns (all of type string); default id, value.
	Columns []string
	// PartitionKeys are the partition columns in order; none for an
	// unpartitioned table.
	PartitionKeys []string
	// ViewText makes the table a view (VIRTUAL_VIEW) with this query.
	ViewText string
	// External makes it an EXTERNAL_TABLE rather than a MANAGED_TABLE.
	External bool
	// Transactional makes a managed table insert-only transactional (its
	// parameters transactional=true, transactional_properties=insert_only, the
	// kind a metastore without hive-exec accepts): its data changes only
	// through transactions (txn.go), which log no INSERT event.
	Transactional bool
}

type model struct {
	// mu is held for a whole mutation, the event append included, so that the
	// log's order is the order in which the model changed.
	mu      sync.Mutex
	dbs     map[string]*databaseState
	nextTxn int64
	txns    map[int64]*txnState // open transactions (txn.go)
	version TxnStyle            // whose transaction events the log gets
	// nextCompaction is the id of the latest compaction (0: none).
	nextCompaction int64
}

type databaseState struct {
	name   string
	tables map[string]*tableState
}

type tableState struct {
	Table
	created, ddlTime int32
	partitions       map[string]*partitionState // by name
	tjson            string                     // cached TJSON; "" when stale
	// nextWriteID is the write id the table's next allocation gets and data
	// what its committed transactions wrote (transactional tables, txn.go).
	nextWriteID int64
	data        TableData
}

type partitionState struct {
	values           []string
	name             string
	created, ddlTime int32
	tjson            string
}

func newModel() model {
	return model{dbs: map[string]*databaseState{}, nextTxn: 1, txns: map[int64]*txnState{}}
}

func (t *tableState) tableType() string {
	switch {
	case t.ViewText != "":
		return "VIRTUAL_VIEW"
	case t.External:
		return "EXTERNAL_TABLE"
	}
	return "MANAGED_TABLE"
}

func (t *tableState) obj() string {
	if t.tjson == "" {
		t.tjson = tableTJSON(t)
	}
	return t.tjson
}

func (t *tableState) partitionObj(p *partitionState) string {
	if p.tjson == "" {
		p.tjson = partitionTJSON(t, p)
	}
	return p.tjson
}

func (s *Server) hdr() head { return head{Server: s.URI()} }

func (s *Server) now() int64 { return s.log.now().Unix() }

func (s *Server) db(name string) (*databaseState, error) {
	d, ok := s.model.dbs[name]
	if !ok {
		return nil, fmt.Errorf("hmstest: database %q: %w", name, ErrNotFound)
	}
	return d, nil
}

func (s *Server) table(db, name string) (*tableState, error) {
	d, err := s.db(db)
	if err != nil {
		return nil, err
	}
	t, ok := d.tables[name]
	if !ok {
		return nil, fmt.Errorf("hmstest: table %s.%s: %w", db, name, ErrNotFound)
	}
	return t, nil
}

// CreateDatabase creates a database (CREATE_DATABASE).
func (s *Server) CreateDatabase(db string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	if _, ok := s.model.dbs[db]; ok {
		return fmt.Errorf("hmstest: database %q: %w", db, ErrExists)
	}
	if db == "" {
		return errors.New("hmstest: empty database name")
	}
	_, err := s.appendMessage(message.EventCreateDatabase, db, "", s.now(),
		databaseMessage{head: s.hdr(), DB: db, DBJSON: databaseTJSON(db), Timestamp: s.now()})
	if err != nil {
		return err
	}
	s.model.dbs[db] = &databaseState{name: db, tables: map[string]*tableState{}}
	return nil
}

// DropDatabase drops a database and its tables as DROP DATABASE CASCADE does:
// a DROP_TABLE event per table, then DROP_DATABASE.
func (s *Server) DropDatabase(db string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	d, err := s.db(db)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(d.tables) {
		if err := s.dropTableLocked(d, d.tables[name]); err != nil {
			return err
		}
	}
	now := s.now()
	if _, err := s.appendMessage(message.EventDropDatabase, db, "", now,
		databaseMessage{head: s.hdr(), DB: db, DBJSON: databaseTJSON(db), Timestamp: now}); err != nil {
		return err
	}
	delete(s.model.dbs, db)
	return nil
}

// RenameDatabase renames a database with its tables (ALTER_DATABASE; the
// header names the old database).
func (s *Server) RenameDatabase(old, new string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	d, err := s.db(old)
	if err != nil {
		return err
	}
	if _, ok := s.model.dbs[new]; ok {
		return fmt.Errorf("hmstest: database %q: %w", new, ErrExists)
	}
	now := s.now()
	if _, err := s.appendMessage(message.EventAlterDatabase, old, "", now, alterDatabaseMessage{
		head: s.hdr(), DB: old, Before: databaseTJSON(old), After: databaseTJSON(new), Timestamp: now}); err != nil {
		return err
	}
	delete(s.model.dbs, old)
	d.name = new
	for _, t := range d.tables {
		t.DB, t.tjson = new, ""
		for _, p := range t.partitions {
			p.tjson = ""
		}
	}
	s.model.dbs[new] = d
	return nil
}

// CreateTable creates a table or view (CREATE_TABLE).
func (s *Server) CreateTable(t Table) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	d, err := s.db(t.DB)
	if err != nil {
		return err
	}
	if _, ok := d.tables[t.Name]; ok {
		return fmt.Errorf("hmstest: table %s.%s: %w", t.DB, t.Name, ErrExists)
	}
	if t.Name == "" {
		return errors.New("hmstest: empty table name")
	}
	if t.ViewText != "" && len(t.PartitionKeys) > 0 {
		return errors.New("hmstest: a view cannot have partition keys here")
	}
	if t.Transactional && (t.ViewText != "" || t.External) {
		return fmt.Errorf("hmstest: table %s.%s: only a managed table can be transactional", t.DB, t.Name)
	}
	if len(t.Columns) == 0 {
		t.Columns = []string{"id", "value"}
	}
	t.Columns = append([]string(nil), t.Columns...)
	t.PartitionKeys = append([]string(nil), t.PartitionKeys...)
	now := s.now()
	ts := &tableState{Table: t, created: int32(now), ddlTime: int32(now), partitions: map[string]*partitionState{}, nextWriteID: 1}
	if _, err := s.appendMessage(message.EventCreateTable, t.DB, t.Name, now, createTableMessage{
		head: s.hdr(), DB: t.DB, Table: t.Name, TableType: ts.tableType(), TableObj: ts.obj(), Timestamp: now, Files: []string{}}); err != nil {
		return err
	}
	d.tables[t.Name] = ts
	return nil
}

// DropTable drops a table with its partitions (DROP_TABLE).
func (s *Server) DropTable(db, table string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.table(db, table)
	if err != nil {
		return err
	}
	return s.dropTableLocked(s.model.dbs[db], t)
}

func (s *Server) dropTableLocked(d *databaseState, t *tableState) error {
	if err := s.lockedByTxn(t); err != nil {
		return err
	}
	now := s.now()
	if _, err := s.appendMessage(message.EventDropTable, t.DB, t.Name, now, dropTableMessage{
		head: s.hdr(), DB: t.DB, Table: t.Name, TableType: t.tableType(), TableObj: t.obj(), Timestamp: now}); err != nil {
		return err
	}
	delete(d.tables, t.Name)
	return nil
}

// RenameTable renames a table, possibly into another database (ALTER_TABLE:
// the header has the new names, the body the old ones).
func (s *Server) RenameTable(db, table, newDB, newTable string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.table(db, table)
	if err != nil {
		return err
	}
	nd, err := s.db(newDB)
	if err != nil {
		return err
	}
	if _, ok := nd.tables[newTable]; ok {
		return fmt.Errorf("hmstest: table %s.%s: %w", newDB, newTable, ErrExists)
	}
	if err := s.lockedByTxn(t); err != nil {
		return err
	}
	before := t.obj()
	renamed := *t
	renamed.DB, renamed.Name, renamed.tjson = newDB, newTable, ""
	now := s.now()
	renamed.ddlTime = int32(now)
	if _, err := s.appendMessage(message.EventAlterTable, newDB, newTable, now, alterTableMessage{
		head: s.hdr(), DB: db, Table: table, TableType: t.tableType(), Before: before, After: renamed.obj(),
		IsTruncateOp: "false", Timestamp: now}); err != nil {
		return err
	}
	delete(s.model.dbs[db].tables, table)
	for _, p := range renamed.partitions {
		p.tjson = ""
	}
	nd.tables[newTable] = &renamed
	return nil
}

// AlterTable changes a table without renaming it: a column is added (for a
// view, its query is replaced). ALTER_TABLE.
func (s *Server) AlterTable(db, table string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.table(db, table)
	if err != nil {
		return err
	}
	before := t.obj()
	after := *t
	after.tjson = ""
	if t.ViewText != "" {
		after.ViewText = t.ViewText + " "
	} else {
		after.Columns = append(append([]string(nil), t.Columns...), fmt.Sprintf("c%d", len(t.Columns)))
	}
	now := s.now()
	after.ddlTime = int32(now)
	if _, err := s.appendMessage(message.EventAlterTable, db, table, now, alterTableMessage{
		head: s.hdr(), DB: db, Table: table, TableType: t.tableType(), Before: before, After: after.obj(),
		IsTruncateOp: "false", Timestamp: now}); err != nil {
		return err
	}
	*t = after
	return nil
}

func (s *Server) partitionedTable(db, table string) (*tableState, error) {
	t, err := s.table(db, table)
	if err != nil {
		return nil, err
	}
	if len(t.PartitionKeys) == 0 {
		return nil, fmt.Errorf("hmstest: table %s.%s is not partitioned", db, table)
	}
	return t, nil
}

func (s *Server) partition(t *tableState, values []string) (*partitionState, string, error) {
	name, err := message.PartitionName(t.PartitionKeys, values)
	if err != nil {
		return nil, "", fmt.Errorf("hmstest: table %s.%s: %w", t.DB, t.Name, err)
	}
	return t.partitions[name], name, nil
}

// AddPartitions adds partitions, each given by its values in key order, in one
// ADD_PARTITION event. It fails, adding none, if one exists.
func (s *Server) AddPartitions(db, table string, values ...[]string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.partitionedTable(db, table)
	if err != nil {
		return err
	}
	if len(values) == 0 {
		return errors.New("hmstest: AddPartitions without partitions")
	}
	now := s.now()
	msg := addPartitionMessage{head: s.hdr(), DB: db, Table: table, TableType: t.tableType(), TableObj: t.obj(), Timestamp: now}
	added := make([]*partitionState, 0, len(values))
	seen := map[string]bool{}
	for _, v := range values {
		p, name, err := s.partition(t, v)
		if err != nil {
			return err
		}
		if p != nil || seen[name] {
			return fmt.Errorf("hmstest: partition %s of %s.%s: %w", name, db, table, ErrExists)
		}
		seen[name] = true
		np := &partitionState{values: append([]string(nil), v...), name: name, created: int32(now), ddlTime: int32(now)}
		added = append(added, np)
		msg.Partitions = append(msg.Partitions, spec(t.PartitionKeys, v))
		msg.PartitionList = append(msg.PartitionList, t.partitionObj(np))
		msg.PartitionFiles = append(msg.PartitionFiles, partitionFiles{PartitionName: name, Files: []string{}})
	}
	if _, err := s.appendMessage(message.EventAddPartition, db, table, now, msg); err != nil {
		return err
	}
	for _, p := range added {
		t.partitions[p.name] = p
	}
	return nil
}

// DropPartitions drops partitions in one DROP_PARTITION event; all must exist.
func (s *Server) DropPartitions(db, table string, values ...[]string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.partitionedTable(db, table)
	if err != nil {
		return err
	}
	if len(values) == 0 {
		return errors.New("hmstest: DropPartitions without partitions")
	}
	now := s.now()
	msg := dropPartitionMessage{head: s.hdr(), DB: db, Table: table, TableType: t.tableType(), TableObj: t.obj(), Timestamp: now}
	var names []string
	for _, v := range values {
		p, name, err := s.partition(t, v)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("hmstest: partition %s of %s.%s: %w", name, db, table, ErrNotFound)
		}
		names = append(names, name)
		msg.Partitions = append(msg.Partitions, spec(t.PartitionKeys, v))
	}
	if _, err := s.appendMessage(message.EventDropPartition, db, table, now, msg); err != nil {
		return err
	}
	for _, n := range names {
		delete(t.partitions, n)
	}
	return nil
}

// AlterPartition alters one partition (ALTER_PARTITION). With after equal to
// before it is altered in place (new statistics); otherwise its values change
// (a partition rename).
func (s *Server) AlterPartition(db, table string, before, after []string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.partitionedTable(db, table)
	if err != nil {
		return err
	}
	p, name, err := s.partition(t, before)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("hmstest: partition %s of %s.%s: %w", name, db, table, ErrNotFound)
	}
	q, newName, err := s.partition(t, after)
	if err != nil {
		return err
	}
	if q != nil && newName != name {
		return fmt.Errorf("hmstest: partition %s of %s.%s: %w", newName, db, table, ErrExists)
	}
	now := s.now()
	np := &partitionState{values: append([]string(nil), after...), name: newName, created: p.created, ddlTime: int32(now)}
	if _, err := s.appendMessage(message.EventAlterPartition, db, table, now, alterPartitionMessage{
		head: s.hdr(), DB: db, Table: table, TableType: t.tableType(), TableObj: t.obj(), IsTruncateOp: "false",
		Timestamp: now, KeyValues: spec(t.PartitionKeys, before), Before: t.partitionObj(p), After: t.partitionObj(np)}); err != nil {
		return err
	}
	delete(t.partitions, name)
	t.partitions[newName] = np
	return nil
}

// AlterPartitions alters existing partitions in place in one ALTER_PARTITIONS
// event (Hive 4's batch alter).
func (s *Server) AlterPartitions(db, table string, values ...[]string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.partitionedTable(db, table)
	if err != nil {
		return err
	}
	now := s.now()
	msg := alterPartitionsMessage{head: s.hdr(), DB: db, Table: table, TableType: t.tableType(), TableObj: t.obj(), IsTruncateOp: "false", Timestamp: now}
	var altered []*partitionState
	for _, v := range values {
		p, name, err := s.partition(t, v)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("hmstest: partition %s of %s.%s: %w", name, db, table, ErrNotFound)
		}
		np := *p
		np.ddlTime, np.tjson = int32(now), ""
		altered = append(altered, &np)
		msg.Partitions = append(msg.Partitions, spec(t.PartitionKeys, v))
		msg.PartitionList = append(msg.PartitionList, t.partitionObj(&np))
	}
	if len(altered) == 0 {
		return errors.New("hmstest: AlterPartitions without partitions")
	}
	if _, err := s.appendMessage(message.EventAlterPartitions, db, table, now, msg); err != nil {
		return err
	}
	for _, p := range altered {
		t.partitions[p.name] = p
	}
	return nil
}

// Insert records an INSERT into a table: into the partition with values, or
// into an unpartitioned table when values is nil. Into a transactional table
// it is a transaction of its own, as Hive's auto-commit INSERT is: OPEN_TXN,
// ALLOC_WRITE_ID_EVENT, COMMIT_TXN, and no INSERT event.
func (s *Server) Insert(db, table string, values []string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.table(db, table)
	if err != nil {
		return err
	}
	if t.Transactional {
		return s.autoCommitWriteLocked(t, values)
	}
	now := s.now()
	msg := insertMessage{head: s.hdr(), DB: db, Table: table, TableType: t.tableType(), TableObj: t.obj(),
		Timestamp: now, Replace: "false", Files: []string{"hdfs://hmstest/data/000000_0"}}
	if values != nil || len(t.PartitionKeys) > 0 {
		p, name, err := s.partition(t, values)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("hmstest: partition %s of %s.%s: %w", name, db, table, ErrNotFound)
		}
		obj := t.partitionObj(p)
		msg.PtnObj = &obj
	}
	_, err = s.appendMessage(message.EventInsert, db, table, now, msg)
	return err
}

// UpdateTableColumnStats records new column statistics of a table
// (UPDATE_TBL_COL_STAT_EVENT), which changes nothing an FE caches.
func (s *Server) UpdateTableColumnStats(db, table string) error {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	t, err := s.table(db, table)
	if err != nil {
		return err
	}
	now := s.now()
	w := newTJSONWriter()
	w.begin()
	w.field(thrift.STRUCT, 1) // ColumnStatisticsDesc
	w.begin()
	w.boolean(1, true)
	w.str(2, db)
	w.str(3, table)
	w.i64(4, now)
	w.end()
	w.fieldEnd()
	w.end()
	_, err = s.appendMessage("UPDATE_TBL_COL_STAT_EVENT", db, table, now, tableColumnStatsMessage{
		head: s.hdr(), Timestamp: now, ColStats: w.text(), TableObj: t.obj(),
		Parameters: orderedMap{{"COLUMN_STATS_ACCURATE", `{"BASIC_STATS":"true"}`}}})
	return err
}

// Snapshot returns the truth: database → table → the table's partition names,
// sorted (never nil; empty for unpartitioned tables and views).
func (s *Server) Snapshot() map[string]map[string][]string {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	out := make(map[string]map[string][]string, len(s.model.dbs))
	for name, d := range s.model.dbs {
		tables := make(map[string][]string, len(d.tables))
		for tn, t := range d.tables {
			tables[tn] = sortedKeys(t.partitions)
		}
		out[name] = tables
	}
	return out
}

// Databases lists the databases, sorted.
func (s *Server) Databases() []string {
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	return sortedKeys(s.model.dbs)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
