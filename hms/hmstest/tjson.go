package hmstest

import (
	"context"
	"fmt"

	"github.com/apache/thrift/lib/go/thrift"
)

// The embedded objects of Hive's messages are Thrift Table, Partition and Database
// structs serialised with TJSONProtocol. They are written here with Thrift's own
// TJSONProtocol, field by field with Hive's ids and types, so their encoding is
// exactly what a metastore writes without the full Hive IDL in the project.

type tjsonWriter struct {
	ctx context.Context
	buf *thrift.TMemoryBuffer
	p   *thrift.TJSONProtocol
	err error
}

func newTJSONWriter() *tjsonWriter {
	buf := thrift.NewTMemoryBuffer()
	return &tjsonWriter{ctx: context.Background(), buf: buf, p: thrift.NewTJSONProtocol(buf)}
}

func (w *tjsonWriter) check(err error) {
	if w.err == nil && err != nil {
		w.err = err
	}
}

func (w *tjsonWriter) begin() { w.check(w.p.WriteStructBegin(w.ctx, "")) }
func (w *tjsonWriter) end()   { w.check(w.p.WriteFieldStop(w.ctx)); w.check(w.p.WriteStructEnd(w.ctx)) }
func (w *tjsonWriter) field(t thrift.TType, id int16) {
	w.check(w.p.WriteFieldBegin(w.ctx, "", t, id))
}
func (w *tjsonWriter) fieldEnd() { w.check(w.p.WriteFieldEnd(w.ctx)) }

func (w *tjsonWriter) str(id int16, v string) {
	w.field(thrift.STRING, id)
	w.check(w.p.WriteString(w.ctx, v))
	w.fieldEnd()
}

func (w *tjsonWriter) i32(id int16, v int32) {
	w.field(thrift.I32, id)
	w.check(w.p.WriteI32(w.ctx, v))
	w.fieldEnd()
}

func (w *tjsonWriter) i64(id int16, v int64) {
	w.field(thrift.I64, id)
	w.check(w.p.WriteI64(w.ctx, v))
	w.fieldEnd()
}

func (w *tjsonWriter) boolean(id int16, v bool) {
	w.field(thrift.BOOL, id)
	w.check(w.p.WriteBool(w.ctx, v))
	w.fieldEnd()
}

func (w *tjsonWriter) strList(id int16, vs []string) {
	w.field(thrift.LIST, id)
	w.check(w.p.WriteListBegin(w.ctx, thrift.STRING, len(vs)))
	for _, v := range vs {
		w.check(w.p.WriteString(w.ctx, v))
	}
	w.check(w.p.WriteListEnd(w.ctx))
	w.fieldEnd()
}

// strMap writes map<string,string> with keys in the given order.
func (w *tjsonWriter) strMap(id int16, kv ...string) {
	w.field(thrift.MAP, id)
	w.check(w.p.WriteMapBegin(w.ctx, thrift.STRING, thrift.STRING, len(kv)/2))
	for i := 0; i+1 < len(kv); i += 2 {
		w.check(w.p.WriteString(w.ctx, kv[i]))
		w.check(w.p.WriteString(w.ctx, kv[i+1]))
	}
	w.check(w.p.WriteMapEnd(w.ctx))
	w.fieldEnd()
}

// fieldSchemas writes list<FieldSchema{1 name, 2 type, 3 comment}>.
func (w *tjsonWriter) fieldSchemas(id int16, names []string, comment string) {
	w.field(thrift.LIST, id)
	w.check(w.p.WriteListBegin(w.ctx, thrift.STRUCT, len(names)))
	for _, n := range names {
		w.begin()
		w.str(1, n)
		w.str(2, "string")
		if comment != "" {
			w.str(3, comment)
		}
		w.end()
	}
	w.check(w.p.WriteListEnd(w.ctx))
	w.fieldEnd()
}

// storageDescriptor writes a StorageDescriptor of an ORC table or partition.
func (w *tjsonWriter) storageDescriptor(id int16, cols []string, location string) {
	w.field(thrift.STRUCT, id)
	w.begin()
	w.fieldSchemas(1, cols, "column")
	w.str(2, location)
	w.str(3, "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat")
	w.str(4, "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat")
	w.boolean(5, false)
	w.i32(6, -1)
	w.field(thrift.STRUCT, 7) // SerDeInfo
	w.begin()
	w.str(2, "org.apache.hadoop.hive.ql.io.orc.OrcSerde")
	w.strMap(3, "serialization.format", "1")
	w.end()
	w.fieldEnd()
	w.strList(8, nil) // bucketCols
	w.field(thrift.LIST, 9)
	w.check(w.p.WriteListBegin(w.ctx, thrift.STRUCT, 0)) // sortCols
	w.check(w.p.WriteListEnd(w.ctx))
	w.fieldEnd()
	w.strMap(10)
	w.field(thrift.STRUCT, 11) // SkewedInfo
	w.begin()
	w.strList(1, nil)
	w.field(thrift.LIST, 2)
	w.check(w.p.WriteListBegin(w.ctx, thrift.LIST, 0))
	w.check(w.p.WriteListEnd(w.ctx))
	w.fieldEnd()
	w.field(thrift.MAP, 3)
	w.check(w.p.WriteMapBegin(w.ctx, thrift.LIST, thrift.STRING, 0))
	w.check(w.p.WriteMapEnd(w.ctx))
	w.fieldEnd()
	w.end()
	w.fieldEnd()
	w.boolean(12, false)
	w.end()
	w.fieldEnd()
}

func (w *tjsonWriter) text() string {
	w.check(w.p.Flush(w.ctx))
	if w.err != nil {
		// Only a bug in this file can make writing to memory fail.
		panic(fmt.Sprintf("hmstest: writing TJSON: %v", w.err))
	}
	return w.buf.String()
}

// tableTJSON is a Thrift Table as Hive 3 writes it (fields 1–19).
func tableTJSON(t *tableState) string {
	w := newTJSONWriter()
	w.begin()
	w.str(1, t.Name)
	w.str(2, t.DB)
	w.str(3, "hive")
	w.i32(4, t.created)
	w.i32(5, 0)
	w.i32(6, 0)
	loc := ""
	if t.ViewText == "" {
		loc = fmt.Sprintf("hdfs://hmstest/warehouse/tablespace/managed/hive/%s.db/%s", t.DB, t.Name)
	}
	w.storageDescriptor(7, t.Columns, loc)
	w.fieldSchemas(8, t.PartitionKeys, "")
	if t.Transactional {
		w.strMap(9, "transient_lastDdlTime", fmt.Sprint(t.ddlTime), "bucketing_version", "2",
			"transactional", "true", "transactional_properties", "insert_only")
	} else {
		w.strMap(9, "transient_lastDdlTime", fmt.Sprint(t.ddlTime), "bucketing_version", "2")
	}
	if t.ViewText != "" {
		w.str(10, t.ViewText)
		w.str(11, t.ViewText)
	}
	w.str(12, t.tableType())
	w.boolean(15, false)
	w.str(17, "hive")
	w.i32(18, 1)
	w.i64(19, 0)
	w.end()
	return w.text()
}

// partitionTJSON is a Thrift Partition as Hive 3 writes it.
func partitionTJSON(t *tableState, p *partitionState) string {
	w := newTJSONWriter()
	w.begin()
	w.strList(1, p.values)
	w.str(2, t.DB)
	w.str(3, t.Name)
	w.i32(4, p.created)
	w.i32(5, 0)
	w.storageDescriptor(6, t.Columns, fmt.Sprintf("hdfs://hmstest/warehouse/tablespace/managed/hive/%s.db/%s/%s", t.DB, t.Name, p.name))
	w.strMap(7, "transient_lastDdlTime", fmt.Sprint(p.ddlTime), "numFiles", "1", "totalSize", "4096")
	w.str(9, "hive")
	w.i64(10, 0)
	w.end()
	return w.text()
}

// databaseTJSON is a Thrift Database.
func databaseTJSON(name string) string {
	w := newTJSONWriter()
	w.begin()
	w.str(1, name)
	w.str(2, "")
	w.str(3, "hdfs://hmstest/warehouse/tablespace/managed/hive/"+name+".db")
	w.strMap(4)
	w.str(6, "hive")
	w.i32(7, 1)
	w.str(8, "hive")
	w.end()
	return w.text()
}
