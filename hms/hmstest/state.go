package hmstest

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/hmssync/hmssync/hms/message"
)

// stateVersion is the version of the saved state's layout.
const stateVersion = 1

// savedState is the server's notification log and object model, as SaveState
// writes them: enough for a restarted server to continue the same log (the
// same event ids, the next id after the last one) over the same objects.
type savedState struct {
	Version     int             `json:"version"`
	NextEventID int64           `json:"next_event_id"`
	NextTxnID   int64           `json:"next_txn_id"`
	Events      []message.Event `json:"events"`
	Databases   []savedDB       `json:"databases"`
	// MetastoreUUID is the db uuid ("" when the server offers none), kept so
	// that a restarted server is the same metastore to a sidecar; absent in a
	// state saved without it, which leaves the loading server's own uuid.
	MetastoreUUID *string `json:"metastore_db_uuid,omitempty"`
	// Txns are the open transactions (absent: none), LastCompaction the id
	// of the latest compaction.
	Txns           []savedTxn `json:"open_transactions,omitempty"`
	LastCompaction int64      `json:"last_compaction_id,omitempty"`
}

type savedTxn struct {
	ID     int64        `json:"id"`
	Writes []savedWrite `json:"writes,omitempty"`
}

type savedWrite struct {
	DB         string   `json:"db"`
	Table      string   `json:"table"`
	WriteID    int64    `json:"write_id"`
	Partitions []string `json:"partitions,omitempty"`
}

type savedDB struct {
	Name   string       `json:"name"`
	Tables []savedTable `json:"tables"`
}

type savedTable struct {
	Table
	Created    int32            `json:"created"`
	DDLTime    int32            `json:"ddl_time"`
	Partitions []savedPartition `json:"partitions,omitempty"`
	// NextWriteID and Data are a transactional table's (txn.go).
	NextWriteID int64      `json:"next_write_id,omitempty"`
	Data        *TableData `json:"txn_data,omitempty"`
}

type savedPartition struct {
	Values  []string `json:"values"`
	Name    string   `json:"name"`
	Created int32    `json:"created"`
	DDLTime int32    `json:"ddl_time"`
}

// SaveState writes the notification log and the object model to w as JSON, in
// one consistent cut (no mutation in between).
func (s *Server) SaveState(w io.Writer) error {
	s.model.mu.Lock()
	s.log.mu.Lock()
	uuid := s.log.uuid
	st := savedState{Version: stateVersion, NextEventID: s.log.next, NextTxnID: s.model.nextTxn, Events: append([]message.Event{}, s.log.events...),
		MetastoreUUID: &uuid}
	s.log.mu.Unlock()
	for _, d := range s.model.dbs {
		sd := savedDB{Name: d.name}
		for _, t := range d.tables {
			stb := savedTable{Table: t.Table, Created: t.created, DDLTime: t.ddlTime}
			if t.Transactional {
				data := t.data
				stb.NextWriteID, stb.Data = t.nextWriteID, &data
			}
			for _, p := range t.partitions {
				stb.Partitions = append(stb.Partitions, savedPartition{Values: p.values, Name: p.name, Created: p.created, DDLTime: p.ddlTime})
			}
			sort.Slice(stb.Partitions, func(i, j int) bool { return stb.Partitions[i].Name < stb.Partitions[j].Name })
			sd.Tables = append(sd.Tables, stb)
		}
		sort.Slice(sd.Tables, func(i, j int) bool { return sd.Tables[i].Name < sd.Tables[j].Name })
		st.Databases = append(st.Databases, sd)
	}
	for _, id := range sortedTxnIDs(s.model.txns) {
		stx := savedTxn{ID: id}
		for _, w := range s.model.txns[id].writes {
			stx.Writes = append(stx.Writes, savedWrite{DB: w.db, Table: w.table, WriteID: w.writeID, Partitions: w.partitions})
		}
		st.Txns = append(st.Txns, stx)
	}
	st.LastCompaction = s.model.nextCompaction
	s.model.mu.Unlock()
	sort.Slice(st.Databases, func(i, j int) bool { return st.Databases[i].Name < st.Databases[j].Name })
	return json.NewEncoder(w).Encode(st)
}

// LoadState replaces the notification log and the object model with what
// SaveState wrote. The state is checked before anything is replaced: event ids
// must ascend below the next id, names must be unique; on an error the server
// is unchanged.
func (s *Server) LoadState(r io.Reader) error {
	var st savedState
	if err := json.NewDecoder(r).Decode(&st); err != nil {
		return fmt.Errorf("hmstest: saved state: %w", err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("hmstest: saved state version %d, want %d", st.Version, stateVersion)
	}
	if st.NextEventID < 1 || st.NextTxnID < 1 {
		return fmt.Errorf("hmstest: saved state: next event id %d, next transaction id %d: want 1 or more", st.NextEventID, st.NextTxnID)
	}
	prev := int64(0)
	for _, e := range st.Events {
		if e.ID <= prev || e.ID >= st.NextEventID {
			return fmt.Errorf("hmstest: saved state: event id %d after %d (next id %d): want ascending ids below the next id", e.ID, prev, st.NextEventID)
		}
		prev = e.ID
	}
	dbs := map[string]*databaseState{}
	for _, sd := range st.Databases {
		if sd.Name == "" || dbs[sd.Name] != nil {
			return fmt.Errorf("hmstest: saved state: database %q empty or twice", sd.Name)
		}
		d := &databaseState{name: sd.Name, tables: map[string]*tableState{}}
		for _, stb := range sd.Tables {
			if stb.Name == "" || stb.DB != sd.Name || d.tables[stb.Name] != nil {
				return fmt.Errorf("hmstest: saved state: table %q of database %q: empty, in another database or twice", stb.Name, sd.Name)
			}
			t := &tableState{Table: stb.Table, created: stb.Created, ddlTime: stb.DDLTime, partitions: map[string]*partitionState{}, nextWriteID: max(stb.NextWriteID, 1)}
			if stb.Data != nil {
				t.data = *stb.Data
			}
			for _, p := range stb.Partitions {
				if len(p.Values) != len(t.PartitionKeys) || t.partitions[p.Name] != nil {
					return fmt.Errorf("hmstest: saved state: partition %q of %s.%s: %d values for %d keys, or twice", p.Name, sd.Name, stb.Name, len(p.Values), len(t.PartitionKeys))
				}
				t.partitions[p.Name] = &partitionState{values: p.Values, name: p.Name, created: p.Created, ddlTime: p.DDLTime}
			}
			d.tables[stb.Name] = t
		}
		dbs[sd.Name] = d
	}
	txns := map[int64]*txnState{}
	for _, stx := range st.Txns {
		if stx.ID < 1 || stx.ID >= st.NextTxnID || txns[stx.ID] != nil {
			return fmt.Errorf("hmstest: saved state: open transaction %d: below 1, not below the next transaction id %d, or twice", stx.ID, st.NextTxnID)
		}
		tx := &txnState{id: stx.ID}
		for _, w := range stx.Writes {
			if d := dbs[w.DB]; d == nil || d.tables[w.Table] == nil || !d.tables[w.Table].Transactional {
				return fmt.Errorf("hmstest: saved state: open transaction %d writes %s.%s, which is not a transactional table of the state", stx.ID, w.DB, w.Table)
			}
			tx.writes = append(tx.writes, &txnWrite{db: w.DB, table: w.Table, writeID: w.WriteID, partitions: w.Partitions})
		}
		txns[stx.ID] = tx
	}
	s.model.mu.Lock()
	defer s.model.mu.Unlock()
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.model.dbs, s.model.nextTxn, s.model.txns, s.model.nextCompaction = dbs, st.NextTxnID, txns, st.LastCompaction
	s.log.events, s.log.next = st.Events, st.NextEventID
	if st.MetastoreUUID != nil {
		s.log.uuid = *st.MetastoreUUID
	}
	return nil
}
