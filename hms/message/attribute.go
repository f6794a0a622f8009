package message

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/hmssync/hmssync/change"
)

// Attribute names the objects an event that could not be decoded concerns, so
// that the sidecar can heal just those (SPEC §2: the smallest scope that holds
// the failure) instead of the whole catalog. The names come from the event's
// header; for ALTER_TABLE, whose header names the table after the change, also
// from the message's own db and table (the table before it), when the message can
// be read that far. A table event whose old name cannot be read is attributed to
// the header's database: a rename within it is then healed too. Nil when nothing
// usable is known (no header, a name that is not valid UTF-8, an event that is
// not one table's or database's, ALTER_DATABASE, whose new name the header lacks).
//
// Transaction events: an ALLOC_WRITE_ID_EVENT or a COMMIT_COMPACTION_EVENT
// concerns the one table it names (in the header when it is usable, else in the
// body: Hive 3.1 writes "null" and " " there); OPEN_TXN, COMMIT_TXN and
// ABORT_TXN name no table, so nil (the catalog).
func (d Decoder) Attribute(e Event) []change.Object {
	if e.Type == EventAllocWriteID || e.Type == EventCommitCompaction {
		return d.attributeTable(e)
	}
	if !decodedTypes[e.Type] || e.Type == EventAlterDatabase {
		return nil
	}
	db, ok := headerName(e.DB)
	if !ok {
		return nil
	}
	switch e.Type {
	case EventCreateDatabase, EventDropDatabase:
		return []change.Object{{DB: db}}
	}
	table, ok := headerName(e.Table)
	if !ok {
		return []change.Object{{DB: db}}
	}
	objs := []change.Object{{DB: db, Table: table}}
	if e.Type != EventAlterTable {
		return objs
	}
	oldDB, oldTable, ok := d.bodyNames(e, "db", "table")
	if !ok {
		return []change.Object{{DB: db}}
	}
	if old := (change.Object{DB: oldDB, Table: oldTable}); old != objs[0] {
		objs = append(objs, old)
	}
	return objs
}

// headerName is a name from an event's header as HMS stores it; false when it
// is absent or could not name an object on the FE.
func headerName(name string) (string, bool) {
	if name == "" || name == "null" || strings.TrimSpace(name) == "" || !utf8.ValidString(name) {
		return "", false
	}
	return normaliseIdentifier(name), true
}

// attributeTable names the table of an ALLOC_WRITE_ID_EVENT or
// COMMIT_COMPACTION_EVENT: the header's, else the body's.
func (d Decoder) attributeTable(e Event) []change.Object {
	db, dbOK := headerName(e.DB)
	table, tableOK := headerName(e.Table)
	if !dbOK || !tableOK {
		dbKey := "dbName"
		if e.Type == EventCommitCompaction {
			dbKey = "dbname"
		}
		var ok bool
		if db, table, ok = d.bodyNames(e, dbKey, "tableName"); !ok {
			return nil
		}
	}
	return []change.Object{{DB: db, Table: table}}
}

// bodyNames reads the top-level members dbKey and tableKey of e's message as
// far as the message can be read: a message cut short or corrupt further on
// still gives them when they come first, as Hive writes them.
func (d Decoder) bodyNames(e Event, dbKey, tableKey string) (db, table string, ok bool) {
	bufs := getDecodeBuffers()
	defer putDecodeBuffers(bufs)
	text, err := bufs.messageText(e)
	if err != nil {
		return "", "", false
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", "", false
	}
	for dec.More() && (db == "" || table == "") {
		k, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := k.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		var s string
		if key != dbKey && key != tableKey || json.Unmarshal(v, &s) != nil {
			continue
		}
		name, usable := headerName(s)
		if !usable {
			return "", "", false
		}
		if key == dbKey {
			db = name
		} else {
			table = name
		}
	}
	return db, table, db != "" && table != ""
}
