// Package change defines the change descriptor: the one neutral vocabulary that the
// HMS decoder produces and the FE appliers consume. It depends on nothing else in the
// project so that both sides can share it without importing each other.
package change

import (
	"encoding/json"
	"fmt"
)

// Op is what a descriptor asks the FE to do with its cache.
type Op string

// The operations of SPEC §3. A full refresh is deliberately not an Op: it is a
// property of a Batch, because it replaces everything else in that batch.
const (
	RegisterDatabase   Op = "REGISTER_DATABASE"
	UnregisterDatabase Op = "UNREGISTER_DATABASE"
	RenameDatabase     Op = "RENAME_DATABASE"
	RegisterTable      Op = "REGISTER_TABLE"
	UnregisterTable    Op = "UNREGISTER_TABLE"
	RenameTable        Op = "RENAME_TABLE"
	RefreshTable       Op = "REFRESH_TABLE"
	// RefreshDatabase reloads a database's tables and their caches. The HMS
	// decoder never produces it: self-heal sends it to heal a database.
	RefreshDatabase   Op = "REFRESH_DATABASE"
	AddPartitions     Op = "ADD_PARTITIONS"
	DropPartitions    Op = "DROP_PARTITIONS"
	RefreshPartitions Op = "REFRESH_PARTITIONS"
)

// Ops lists every valid Op, in the order of SPEC §3, with RefreshDatabase after
// RefreshTable.
var Ops = []Op{
	RegisterDatabase, UnregisterDatabase, RenameDatabase,
	RegisterTable, UnregisterTable, RenameTable, RefreshTable, RefreshDatabase,
	AddPartitions, DropPartitions, RefreshPartitions,
}

// Valid reports whether o is one of Ops.
func (o Op) Valid() bool {
	for _, v := range Ops {
		if o == v {
			return true
		}
	}
	return false
}

// DatabaseLevel reports whether o concerns a whole database rather than a table.
func (o Op) DatabaseLevel() bool {
	return o == RegisterDatabase || o == UnregisterDatabase || o == RenameDatabase || o == RefreshDatabase
}

// Descriptor is one change to apply, derived from one HMS notification event. One
// event may yield several descriptors (e.g. a partition whose values changed becomes
// a drop and an add); they share the event id and keep the event's order.
type Descriptor struct {
	EventID    int64    `json:"event_id"`
	Op         Op       `json:"op"`
	DB         string   `json:"db,omitempty"`
	Table      string   `json:"table,omitempty"`
	DBAfter    string   `json:"db_after,omitempty"`
	TableAfter string   `json:"table_after,omitempty"`
	Partitions []string `json:"partitions,omitempty"`
	// UpdateTime is the HMS event's eventTime (seconds since the epoch).
	UpdateTime int64 `json:"update_time"`
}

// Validate reports the first way d is not a well-formed descriptor: an unknown op or
// a key the op needs that is empty. Appliers call it so that a bad descriptor is a
// clear error rather than a malformed statement.
func (d Descriptor) Validate() error {
	if !d.Op.Valid() {
		return fmt.Errorf("event %d: unknown op %q", d.EventID, d.Op)
	}
	if d.DB == "" {
		return fmt.Errorf("event %d: %s without db", d.EventID, d.Op)
	}
	switch d.Op {
	case RenameDatabase:
		if d.DBAfter == "" {
			return fmt.Errorf("event %d: %s without db_after", d.EventID, d.Op)
		}
	case RegisterDatabase, UnregisterDatabase, RefreshDatabase:
	default:
		if d.Table == "" {
			return fmt.Errorf("event %d: %s without table", d.EventID, d.Op)
		}
		switch d.Op {
		case RenameTable:
			if d.DBAfter == "" || d.TableAfter == "" {
				return fmt.Errorf("event %d: %s without db_after and table_after", d.EventID, d.Op)
			}
		case AddPartitions, DropPartitions, RefreshPartitions:
			if len(d.Partitions) == 0 {
				return fmt.Errorf("event %d: %s without partitions", d.EventID, d.Op)
			}
		}
	}
	return nil
}

// Object names a database (Table "") or a table: what a change, a refused
// statement or a heal concerns.
type Object struct {
	DB    string
	Table string
}

// String returns "db.table", or "db" for a database.
func (o Object) String() string {
	if o.Table == "" {
		return o.DB
	}
	return o.DB + "." + o.Table
}

// Objects returns the objects d concerns, without repeats: its table for a
// table op, both the old and the new table for RENAME_TABLE, its database for a
// database op, both databases for RENAME_DATABASE. An unknown op concerns
// nothing.
func (d Descriptor) Objects() []Object {
	if !d.Op.Valid() {
		return nil
	}
	var out []Object
	switch d.Op {
	case RenameDatabase:
		out = []Object{{DB: d.DB}, {DB: d.DBAfter}}
	case RenameTable:
		out = []Object{{DB: d.DB, Table: d.Table}, {DB: d.DBAfter, Table: d.TableAfter}}
	default:
		if d.Op.DatabaseLevel() {
			return []Object{{DB: d.DB}}
		}
		return []Object{{DB: d.DB, Table: d.Table}}
	}
	if out[0] == out[1] {
		out = out[:1]
	}
	return out
}

// MarshalLine returns d's JSON form as one line, as `hmssync events decode` prints it.
func (d Descriptor) MarshalLine() ([]byte, error) {
	return json.Marshal(d)
}
