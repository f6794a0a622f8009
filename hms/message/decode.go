package message

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/hmssync/hmssync/change"
)

// DefaultCatalog is the HMS catalog of events that carry none.
const DefaultCatalog = "hive"

// Decoder turns notification events into change descriptors. The zero value
// decodes the "hive" catalog. It is safe for concurrent use.
type Decoder struct {
	// Catalog is the HMS catalog to follow; events of other catalogs give no
	// descriptors. "" means DefaultCatalog.
	Catalog string
	// fullReading turns off the shortcuts (reading only a prefix of an embedded
	// object, the table cache), for the tests that compare both ways.
	fullReading bool
	// tables caches the tables read (see tableCache); shared by the copies of
	// a decoder made by NewDecoder, nil in a zero Decoder (no cache).
	tables *tableCache
}

// NewDecoder returns a decoder of catalog's events ("" means DefaultCatalog)
// with a table cache of its own (at most tableCacheBytes of table texts): a
// backlog is mostly partition events of a few tables, each carrying its
// table's whole object, which the cache reads once. Its copies share the
// cache and are safe for concurrent use.
func NewDecoder(catalog string) Decoder {
	return Decoder{Catalog: catalog, tables: &tableCache{}}
}

// Decode returns the descriptors of one event, in order, following reference §5.
// Events of other catalogs and of types that do not change what an FE caches
// give none. A message that cannot be decoded gives a *DecodeError.
func (d Decoder) Decode(e Event) ([]change.Descriptor, error) {
	if !d.ownCatalog(e) {
		return nil, nil
	}
	if !decodedTypes[e.Type] {
		return nil, nil
	}
	bufs := getDecodeBuffers()
	defer putDecodeBuffers(bufs)
	bufs.fullReading = d.fullReading
	bufs.tables = d.tables
	bufs.name = tableName{e.DB, e.Table}
	var known knownTable // the text the message's tableObjJson most likely holds
	if d.tables != nil && !d.fullReading {
		known = d.tables.knownText(bufs.name)
	}
	text, err := bufs.messageText(e)
	if err != nil {
		return nil, &DecodeError{EventID: e.ID, EventType: e.Type, Reason: "undecodable message", Err: err}
	}
	m := &bufs.fields
	budget := &bufs.budget
	*budget = newNameBudget(len(text))
	ed := eventDecoder{e: e, m: m, bufs: bufs, names: budget}
	var descs []change.Descriptor
	if e.Type == EventCommitCompaction {
		descs, err = ed.decodeCompaction(text)
	} else {
		if err := m.scan(text, budget, e, known); err != nil {
			return nil, &DecodeError{EventID: e.ID, EventType: e.Type, Reason: "malformed message JSON", Err: err}
		}
		descs, err = ed.decode()
	}
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			return nil, err
		}
		return nil, &DecodeError{EventID: e.ID, EventType: e.Type, Reason: "invalid message", Err: err}
	}
	for i := range descs {
		// Checked before normalising: lower-casing turns invalid bytes into
		// U+FFFD, which would name another object than the metastore's.
		if err := checkUTF8Names(&descs[i]); err != nil {
			return nil, &DecodeError{EventID: e.ID, EventType: e.Type, Reason: "invalid name", Err: err}
		}
		normaliseNames(&descs[i])
	}
	return descs, nil
}

var decodedTypes = map[string]bool{
	EventCreateDatabase: true, EventDropDatabase: true, EventAlterDatabase: true,
	EventCreateTable: true, EventDropTable: true, EventAlterTable: true,
	EventAddPartition: true, EventDropPartition: true, EventAlterPartition: true,
	EventAlterPartitions: true, EventInsert: true, EventReload: true,
	EventCommitCompaction: true,
}

// messageFields are the message members the decoder uses. Embedded objects are
// kept as they stand in the message, and unescaped and parsed only as far as the
// event type needs.
type messageFields struct {
	db, table                               string
	dbJSON, dbBefore, dbAfter               embeddedText
	tableObj, tableBefore, tableAfter       embeddedText
	ptnObj, partitionBefore, partitionAfter embeddedText
	partitionList                           []embeddedText
	partitions                              []byte // the raw JSON array of key→value objects
}

// reset empties m for the next message, keeping the list's array.
func (m *messageFields) reset() {
	clear(m.partitionList) // drop the references to the last message's text
	*m = messageFields{partitionList: m.partitionList[:0]}
}

// embeddedTextBytes is what one element of partitionListJson costs in memory
// however short its text.
const embeddedTextBytes = int(unsafe.Sizeof(embeddedText{}))

// scan reads the members of the message text of e. known, when set, is the
// text tableObjJson (or tableObjBeforeJson) most likely holds.
func (m *messageFields) scan(text []byte, budget *nameBudget, e Event, known knownTable) error {
	embedded := embeddedString
	s := jsonScanner{b: text}
	err := s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "db":
			m.db, err = s.strLike(e.DB)
		case "table":
			m.table, err = s.strLike(e.Table)
		case "dbJson":
			m.dbJSON, err = embedded(&s)
		case "dbObjBeforeJson":
			m.dbBefore, err = embedded(&s)
		case "dbObjAfterJson":
			m.dbAfter, err = embedded(&s)
		case "tableObjJson":
			var ok bool
			if m.tableObj, ok = knownString(&s, known); !ok {
				m.tableObj, err = embedded(&s)
			}
		case "tableObjBeforeJson":
			var ok bool
			if m.tableBefore, ok = knownString(&s, known); !ok {
				m.tableBefore, err = embedded(&s)
			}
		case "tableObjAfterJson":
			m.tableAfter, err = embedded(&s)
		case "ptnObjJson":
			m.ptnObj, err = embedded(&s)
		case "partitionObjBeforeJson":
			m.partitionBefore, err = embedded(&s)
		case "partitionObjAfterJson":
			m.partitionAfter, err = embedded(&s)
		case "partitionListJson":
			if s.null() {
				return nil
			}
			m.partitionList = m.partitionList[:0]
			err = s.array(func(int) error {
				// Each element costs its embeddedText, however short its
				// text: counted, so that a list of empty strings is no bomb.
				if err := budget.takeBytes(embeddedTextBytes); err != nil {
					return err
				}
				raw, err := embedded(&s)
				if err == nil && !raw.set {
					err = errors.New("null element")
				}
				m.partitionList = append(m.partitionList, raw)
				return err
			})
		case "partitions":
			s.ws()
			start := s.i
			if err = s.skip(); err == nil {
				m.partitions = s.b[start:s.i]
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
		return nil
	})
	if err == nil {
		err = s.end()
	}
	return err
}

// eventDecoder applies the mapping of reference §5 to one scanned message.
type eventDecoder struct {
	e     Event
	m     *messageFields
	bufs  *decodeBuffers
	names *nameBudget
}

func (d *eventDecoder) desc(op change.Op, db, table string) change.Descriptor {
	return change.Descriptor{EventID: d.e.ID, Op: op, DB: db, Table: table, UpdateTime: int64(d.e.Time)}
}

func (d *eventDecoder) decode() ([]change.Descriptor, error) {
	switch d.e.Type {
	case EventCreateDatabase, EventDropDatabase:
		db, err := d.database()
		if err != nil {
			return nil, err
		}
		op := change.RegisterDatabase
		if d.e.Type == EventDropDatabase {
			op = change.UnregisterDatabase
		}
		return []change.Descriptor{d.desc(op, db, "")}, nil

	case EventAlterDatabase:
		before, err := d.databaseObject("dbObjBeforeJson", d.m.dbBefore)
		if err != nil {
			return nil, err
		}
		after, err := d.databaseObject("dbObjAfterJson", d.m.dbAfter)
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(before, after) {
			return nil, nil
		}
		r := d.desc(change.RenameDatabase, before, "")
		r.DBAfter = after
		return []change.Descriptor{r}, nil

	case EventCreateTable, EventDropTable:
		db, table, err := d.tableName()
		if err != nil {
			return nil, err
		}
		op := change.RegisterTable
		if d.e.Type == EventDropTable {
			op = change.UnregisterTable
		}
		return []change.Descriptor{d.desc(op, db, table)}, nil

	case EventAlterTable:
		return d.alterTable()

	case EventAddPartition, EventDropPartition, EventAlterPartitions:
		db, table, keys, err := d.partitionedTable()
		if err != nil {
			return nil, err
		}
		var names []string
		if d.e.Type != EventDropPartition && len(d.m.partitionList) > 0 {
			names, err = d.namesFromObjects(keys, d.m.partitionList)
		} else {
			names, err = namesFromSpecs(keys, d.m.partitions, d.names)
		}
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, errors.New("message lists no partitions")
		}
		op := change.AddPartitions
		switch d.e.Type {
		case EventDropPartition:
			op = change.DropPartitions
		case EventAlterPartitions:
			op = change.RefreshPartitions
		}
		r := d.desc(op, db, table)
		r.Partitions = names
		return []change.Descriptor{r}, nil

	case EventAlterPartition:
		return d.alterPartition()

	case EventInsert, EventReload:
		// INSERT names at most one partition (ptnObjJson, null when the table is
		// unpartitioned); RELOAD one (ptnObjJson) or several (partitionListJson).
		var objects []embeddedText
		if d.e.Type == EventReload && len(d.m.partitionList) > 0 {
			objects = d.m.partitionList
		} else if d.m.ptnObj.set {
			objects = []embeddedText{d.m.ptnObj}
		}
		if len(objects) == 0 {
			db, table, err := d.tableName()
			if err != nil {
				return nil, err
			}
			return []change.Descriptor{d.desc(change.RefreshTable, db, table)}, nil
		}
		db, table, keys, err := d.partitionedTable()
		if err != nil {
			return nil, err
		}
		names, err := d.namesFromObjects(keys, objects)
		if err != nil {
			return nil, err
		}
		r := d.desc(change.RefreshPartitions, db, table)
		r.Partitions = names
		return []change.Descriptor{r}, nil
	}
	return nil, nil
}

// database is the db of a CREATE/DROP_DATABASE message: its db field, else the
// name in dbJson.
func (d *eventDecoder) database() (string, error) {
	if d.m.db != "" {
		return d.m.db, nil
	}
	if d.m.dbJSON.set {
		return d.databaseObject("dbJson", d.m.dbJSON)
	}
	return "", errors.New("message has neither db nor dbJson")
}

// databasePrefixBytes is how much of a Database is unescaped at first: its
// name is field 1.
const databasePrefixBytes = 256

func (d *eventDecoder) databaseObject(field string, raw embeddedText) (string, error) {
	if !raw.set {
		return "", fmt.Errorf("message has no %s", field)
	}
	var name string
	err := d.bufs.parseEmbedded(raw, databasePrefixBytes, func(text []byte) (stopped bool, err error) {
		name, stopped, err = parseDatabaseName(text)
		return stopped, err
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return name, nil
}

func (d *eventDecoder) tableObject(field string, raw embeddedText, needView bool) (tableObject, error) {
	if !raw.set {
		return tableObject{}, fmt.Errorf("message has no %s", field)
	}
	t, err := d.bufs.table(raw, needView)
	if err != nil {
		return tableObject{}, fmt.Errorf("%s: %w", field, err)
	}
	return t, nil
}

// tableName is the message's db and table, taken from tableObjJson when the
// message lacks them.
func (d *eventDecoder) tableName() (db, table string, err error) {
	db, table = d.m.db, d.m.table
	if db != "" && table != "" {
		return db, table, nil
	}
	t, err := d.tableObject("tableObjJson", d.m.tableObj, false)
	if err != nil {
		return "", "", fmt.Errorf("message has no db and table: %w", err)
	}
	if db == "" {
		db = t.DB
	}
	if table == "" {
		table = t.Name
	}
	if db == "" || table == "" {
		return "", "", errors.New("message names no db and table")
	}
	return db, table, nil
}

// partitionedTable is the message's db and table and the table's partition keys
// in order, which name partitions.
func (d *eventDecoder) partitionedTable() (db, table string, keys []string, err error) {
	t, err := d.tableObject("tableObjJson", d.m.tableObj, false)
	if err != nil {
		return "", "", nil, err
	}
	if len(t.PartitionKeys) == 0 {
		return "", "", nil, errors.New("tableObjJson: table has no partition keys (field 8)")
	}
	db, table = d.m.db, d.m.table
	if db == "" {
		db = t.DB
	}
	if table == "" {
		table = t.Name
	}
	if db == "" || table == "" {
		return "", "", nil, errors.New("message names no db and table")
	}
	return db, table, t.PartitionKeys, nil
}

// partitionPrefixBytes is how much of a Partition is unescaped at first: the
// values, db and table it is read for come first, before its storage
// descriptor and parameters, most of it. They end 110-140 bytes into the
// Partitions of the real corpus (Hive 3 and 4); longer values are read in full.
const partitionPrefixBytes = 256

// partition reads a Partition; its values go to the scratch list slot (0 or 1)
// of the decode buffers, and stay valid until that slot is used again.
func (d *eventDecoder) partition(raw embeddedText, slot int) (partitionObject, error) {
	var p partitionObject
	values := d.bufs.values[slot]
	err := d.bufs.parseEmbedded(raw, partitionPrefixBytes, func(text []byte) (stopped bool, err error) {
		p, stopped, err = parsePartition(text, values)
		return stopped, err
	})
	d.bufs.values[slot] = p.Values
	return p, err
}

func (d *eventDecoder) partitionObject(field string, raw embeddedText, slot int) (partitionObject, error) {
	p, err := d.partition(raw, slot)
	if err != nil {
		return partitionObject{}, fmt.Errorf("%s: %w", field, err)
	}
	return p, nil
}

func (d *eventDecoder) namesFromObjects(keys []string, objects []embeddedText) ([]string, error) {
	names := make([]string, 0, len(objects))
	for i, raw := range objects {
		p, err := d.partition(raw, 0)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", i, err)
		}
		name, err := PartitionName(keys, p.Values)
		if err == nil {
			err = d.names.take(name)
		}
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", i, err)
		}
		names = append(names, name)
	}
	return names, nil
}

func (d *eventDecoder) alterTable() ([]change.Descriptor, error) {
	before, err := d.tableObject("tableObjBeforeJson", d.m.tableBefore, true)
	if err != nil {
		return nil, err
	}
	after, err := d.tableObject("tableObjAfterJson", d.m.tableAfter, false)
	if err != nil {
		return nil, err
	}
	// The body's db/table are the old names and the header's the new ones; the
	// objects are authoritative, the others fill in what they lack.
	oldDB, oldTable := first(before.DB, d.m.db), first(before.Name, d.m.table)
	newDB, newTable := first(after.DB, d.e.DB), first(after.Name, d.e.Table)
	if oldDB == "" || oldTable == "" || newDB == "" || newTable == "" {
		return nil, errors.New("message does not name the table before and after")
	}
	switch {
	case !strings.EqualFold(oldDB, newDB) || !strings.EqualFold(oldTable, newTable):
		r := d.desc(change.RenameTable, oldDB, oldTable)
		r.DBAfter, r.TableAfter = newDB, newTable
		return []change.Descriptor{r}, nil
	case before.IsView:
		// ALTER VIEW recreates the view: FEs must drop and re-register it.
		r := d.desc(change.RenameTable, oldDB, oldTable)
		r.DBAfter, r.TableAfter = oldDB, oldTable
		return []change.Descriptor{r}, nil
	}
	return []change.Descriptor{d.desc(change.RefreshTable, oldDB, oldTable)}, nil
}

func (d *eventDecoder) alterPartition() ([]change.Descriptor, error) {
	db, table, keys, err := d.partitionedTable()
	if err != nil {
		return nil, err
	}
	if !d.m.partitionBefore.set || !d.m.partitionAfter.set {
		return nil, errors.New("message lacks partitionObjBeforeJson or partitionObjAfterJson")
	}
	before, err := d.partitionObject("partitionObjBeforeJson", d.m.partitionBefore, 0)
	if err != nil {
		return nil, err
	}
	after, err := d.partitionObject("partitionObjAfterJson", d.m.partitionAfter, 1)
	if err != nil {
		return nil, err
	}
	beforeName, err := PartitionName(keys, before.Values)
	if err != nil {
		return nil, fmt.Errorf("partitionObjBeforeJson: %w", err)
	}
	if equalStrings(before.Values, after.Values) {
		r := d.desc(change.RefreshPartitions, db, table)
		r.Partitions = []string{beforeName}
		return []change.Descriptor{r}, nil
	}
	afterName, err := PartitionName(keys, after.Values)
	if err != nil {
		return nil, fmt.Errorf("partitionObjAfterJson: %w", err)
	}
	drop := d.desc(change.DropPartitions, db, table)
	drop.Partitions = []string{beforeName}
	add := d.desc(change.AddPartitions, db, table)
	add.Partitions = []string{afterName}
	return []change.Descriptor{drop, add}, nil
}

// namesFromSpecs names the partitions of a "partitions" member: a list of
// key→value objects whose member order must not be trusted, so values are taken
// in the table's key order.
func namesFromSpecs(keys []string, raw []byte, budget *nameBudget) ([]string, error) {
	if raw == nil {
		return nil, errors.New("message has no partitions")
	}
	s := jsonScanner{b: raw}
	if s.null() {
		return nil, errors.New("message has no partitions")
	}
	var names []string
	values := make([]string, len(keys))
	seen := make([]bool, len(keys))
	err := s.array(func(i int) error {
		clear(seen)
		n := 0
		err := s.object(func(key []byte) error {
			k := keyIndex(keys, key)
			if k < 0 {
				return fmt.Errorf("partition %d: key %q is not a partition key of the table %q", i, key, keys)
			}
			v, _, err := s.str()
			if err != nil {
				return fmt.Errorf("partition %d, key %q: %w", i, key, err)
			}
			if !seen[k] {
				n++
			}
			values[k], seen[k] = v, true
			return nil
		})
		if err != nil {
			return err
		}
		if n != len(keys) {
			return fmt.Errorf("partition %d gives %d of the table's %d partition keys %q", i, n, len(keys), keys)
		}
		name, err := PartitionName(keys, values)
		if err == nil {
			err = budget.take(name)
		}
		names = append(names, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("partitions: %w", err)
	}
	return names, nil
}

// keyIndex finds key among the partition keys; Hive lower-cases key names, so a
// key that differs only in case is the same key.
func keyIndex(keys []string, key []byte) int {
	for i, k := range keys {
		if k == string(key) {
			return i
		}
	}
	for i, k := range keys {
		if strings.EqualFold(k, string(key)) {
			return i
		}
	}
	return -1
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
