package hmstest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/hmssync/hmssync/hms/message"
)

// The message types below reproduce the JSON Hive's JSONMessageFactory writes:
// members in Hive's order (encoding/json keeps struct order), nulls written as
// null, booleans such as isTruncateOp as the strings "true"/"false", non-ASCII
// raw (no HTML escaping), the embedded objects as TJSON strings.

type head struct {
	Server           string `json:"server"`
	ServicePrincipal string `json:"servicePrincipal"`
}

type databaseMessage struct {
	head
	DB        string `json:"db"`
	DBJSON    string `json:"dbJson"`
	Timestamp int64  `json:"timestamp"`
}

type alterDatabaseMessage struct {
	head
	DB        string `json:"db"`
	Before    string `json:"dbObjBeforeJson"`
	After     string `json:"dbObjAfterJson"`
	Timestamp int64  `json:"timestamp"`
}

type createTableMessage struct {
	head
	DB        string   `json:"db"`
	Table     string   `json:"table"`
	TableType string   `json:"tableType"`
	TableObj  string   `json:"tableObjJson"`
	Timestamp int64    `json:"timestamp"`
	Files     []string `json:"files"`
}

type dropTableMessage struct {
	head
	DB        string `json:"db"`
	Table     string `json:"table"`
	TableType string `json:"tableType"`
	TableObj  string `json:"tableObjJson"`
	Timestamp int64  `json:"timestamp"`
}

type alterTableMessage struct {
	head
	DB           string `json:"db"`
	Table        string `json:"table"`
	TableType    string `json:"tableType"`
	Before       string `json:"tableObjBeforeJson"`
	After        string `json:"tableObjAfterJson"`
	IsTruncateOp string `json:"isTruncateOp"`
	Timestamp    int64  `json:"timestamp"`
	WriteID      int64  `json:"writeId"`
}

type partitionFiles struct {
	PartitionName string   `json:"partitionName"`
	Files         []string `json:"files"`
}

type addPartitionMessage struct {
	head
	DB             string           `json:"db"`
	Table          string           `json:"table"`
	TableType      string           `json:"tableType"`
	TableObj       string           `json:"tableObjJson"`
	Timestamp      int64            `json:"timestamp"`
	Partitions     []orderedMap     `json:"partitions"`
	PartitionList  []string         `json:"partitionListJson"`
	PartitionFiles []partitionFiles `json:"partitionFiles"`
}

type dropPartitionMessage struct {
	head
	DB         string       `json:"db"`
	Table      string       `json:"table"`
	TableType  string       `json:"tableType"`
	TableObj   string       `json:"tableObjJson"`
	Timestamp  int64        `json:"timestamp"`
	Partitions []orderedMap `json:"partitions"`
}

type alterPartitionMessage struct {
	head
	DB           string     `json:"db"`
	Table        string     `json:"table"`
	TableType    string     `json:"tableType"`
	TableObj     string     `json:"tableObjJson"`
	IsTruncateOp string     `json:"isTruncateOp"`
	Timestamp    int64      `json:"timestamp"`
	WriteID      int64      `json:"writeId"`
	KeyValues    orderedMap `json:"keyValues"`
	Before       string     `json:"partitionObjBeforeJson"`
	After        string     `json:"partitionObjAfterJson"`
}

type alterPartitionsMessage struct {
	head
	DB            string       `json:"db"`
	Table         string       `json:"table"`
	TableType     string       `json:"tableType"`
	TableObj      string       `json:"tableObjJson"`
	IsTruncateOp  string       `json:"isTruncateOp"`
	Timestamp     int64        `json:"timestamp"`
	WriteID       int64        `json:"writeId"`
	Partitions    []orderedMap `json:"partitions"`
	PartitionList []string     `json:"partitionListJson"`
}

type insertMessage struct {
	head
	DB        string   `json:"db"`
	Table     string   `json:"table"`
	TableType string   `json:"tableType"`
	TableObj  string   `json:"tableObjJson"`
	PtnObj    *string  `json:"ptnObjJson"`
	Timestamp int64    `json:"timestamp"`
	Replace   string   `json:"replace"`
	Files     []string `json:"files"`
}

type openTxnMessage struct {
	TxnIDs    []int64 `json:"txnIds"`
	Timestamp int64   `json:"timestamp"`
	FromTxnID int64   `json:"fromTxnId"`
	ToTxnID   int64   `json:"toTxnId"`
	head
}

// txnMessage is COMMIT_TXN and ABORT_TXN as Hive 3.1 writes them.
type txnMessage struct {
	TxnID     int64 `json:"txnid"`
	Timestamp int64 `json:"timestamp"`
	head
}

// commitTxnMessage is Hive 4's COMMIT_TXN: the lists naming what the
// transaction wrote are filled only by REPL dump, null in the log.
type commitTxnMessage struct {
	txnMessage
	WriteIDs      []int64  `json:"writeIds"`
	Databases     []string `json:"databases"`
	Tables        []string `json:"tables"`
	Partitions    []string `json:"partitions"`
	TableObjs     []string `json:"tableObjs"`
	PartitionObjs []string `json:"partitionObjs"`
	Files         []string `json:"files"`
}

// abortTxnMessage is Hive 4's ABORT_TXN: the databases the transaction had
// allocated write ids in.
type abortTxnMessage struct {
	txnMessage
	DBsUpdated []string `json:"dbsUpdated"`
}

type allocWriteIDMessage struct {
	head
	DBName      string  `json:"dbName"`
	TableName   string  `json:"tableName"`
	TxnIDList   []int64 `json:"txnIdList"`
	WriteIDList []int64 `json:"writeIdList"`
	Timestamp   int64   `json:"timestamp"`
}

type commitCompactionMessage struct {
	txnMessage
	CompactionID int64   `json:"compactionId"`
	Type         string  `json:"type"`
	DB           string  `json:"dbname"`
	Table        string  `json:"tableName"`
	PartName     *string `json:"partName"`
}

type tableColumnStatsMessage struct {
	head
	Timestamp  int64      `json:"timestamp"`
	ColStats   string     `json:"colStatsJson"`
	TableObj   string     `json:"tableObjJson"`
	Parameters orderedMap `json:"parameters"`
	WriteID    int64      `json:"writeId"`
}

// orderedMap is a JSON object whose members keep their order, as Hive's
// LinkedHashMaps (partition specs in the table's key order) do.
type orderedMap [][2]string

func (m orderedMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		for j, s := range kv {
			if j == 1 {
				b.WriteByte(':')
			}
			if err := writeJSONString(&b, s); err != nil {
				return nil, err
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSONString(b *bytes.Buffer, s string) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

func spec(keys, values []string) orderedMap {
	m := make(orderedMap, len(keys))
	for i, k := range keys {
		m[i] = [2]string{k, values[i]}
	}
	return m
}

// encodeMessage writes msg as Hive's JSON text.
func encodeMessage(msg any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		return "", fmt.Errorf("hmstest: encoding %T: %w", msg, err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// gzipMessage is the gzip(json-2.0) form of a JSON text: standard base64 of its gzip.
func (l *eventLog) gzipMessage(text string) (string, error) {
	var b bytes.Buffer
	if l.gz == nil {
		l.gz = gzip.NewWriter(&b)
	} else {
		l.gz.Reset(&b)
	}
	if _, err := l.gz.Write([]byte(text)); err != nil {
		return "", err
	}
	if err := l.gz.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b.Bytes()), nil
}

// appendMessage appends one event of the given type with msg encoded in the
// server's format, and returns it.
func (s *Server) appendMessage(typ, db, table string, now int64, msg any) (message.Event, error) {
	return s.appendEvent(message.Event{Type: typ, DB: db, Table: table, Catalog: "hive"}, now, msg)
}

// appendEvent appends an event with the header fields of h (type, database,
// table, catalog) and msg encoded in the server's format, and returns it.
func (s *Server) appendEvent(h message.Event, now int64, msg any) (message.Event, error) {
	text, err := encodeMessage(msg)
	if err != nil {
		return message.Event{}, err
	}
	l := &s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	e := message.Event{ID: l.next, Time: int32(now), Type: h.Type, DB: h.DB, Table: h.Table, Catalog: h.Catalog, Format: message.FormatJSON, Message: text}
	if l.format == FormatGzip || (l.format == FormatMixed && e.ID%2 == 0) {
		e.Format = message.FormatGzip
		if e.Message, err = l.gzipMessage(text); err != nil {
			return message.Event{}, fmt.Errorf("hmstest: gzip: %w", err)
		}
	}
	l.next++
	l.events = append(l.events, e)
	return e, nil
}
