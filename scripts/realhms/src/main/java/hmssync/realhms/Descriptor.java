package hmssync.realhms;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** One expected change descriptor in the SPEC §3 JSON form; only the keys that apply are set. */
final class Descriptor {
  long eventId;
  final String op;
  String db;
  String table;
  String dbAfter;
  String tableAfter;
  List<String> partitions;
  long updateTime;

  private Descriptor(String op) {
    this.op = op;
  }

  static Descriptor registerDatabase(String db) {
    Descriptor d = new Descriptor("REGISTER_DATABASE");
    d.db = db;
    return d;
  }

  static Descriptor unregisterDatabase(String db) {
    Descriptor d = new Descriptor("UNREGISTER_DATABASE");
    d.db = db;
    return d;
  }

  static Descriptor renameDatabase(String db, String dbAfter) {
    Descriptor d = new Descriptor("RENAME_DATABASE");
    d.db = db;
    d.dbAfter = dbAfter;
    return d;
  }

  static Descriptor table(String op, String db, String table) {
    Descriptor d = new Descriptor(op);
    d.db = db;
    d.table = table;
    return d;
  }

  static Descriptor renameTable(String db, String table, String dbAfter, String tableAfter) {
    Descriptor d = table("RENAME_TABLE", db, table);
    d.dbAfter = dbAfter;
    d.tableAfter = tableAfter;
    return d;
  }

  static Descriptor partitions(String op, String db, String table, List<String> names) {
    Descriptor d = table(op, db, table);
    d.partitions = new ArrayList<>(names);
    return d;
  }

  Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("event_id", eventId);
    m.put("op", op);
    putIfSet(m, "db", db);
    putIfSet(m, "table", table);
    putIfSet(m, "db_after", dbAfter);
    putIfSet(m, "table_after", tableAfter);
    if (partitions != null && !partitions.isEmpty()) {
      m.put("partitions", partitions);
    }
    m.put("update_time", updateTime);
    return m;
  }

  private static void putIfSet(Map<String, Object> m, String k, String v) {
    if (v != null && !v.isEmpty()) {
      m.put(k, v);
    }
  }
}
