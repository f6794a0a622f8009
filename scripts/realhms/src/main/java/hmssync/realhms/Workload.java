package hmssync.realhms;

import java.io.PrintWriter;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.Warehouse;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.FireEventRequest;
import org.apache.hadoop.hive.metastore.api.FireEventRequestData;
import org.apache.hadoop.hive.metastore.api.InsertEventRequestData;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * Drives a real metastore through every change kind of the hmssync reference (hms.md §5) with
 * the real Hive client, and writes what hmssync must report for it: one descriptor line per
 * change in the SPEC §3 form. The descriptors come from what this program did (names it chose,
 * partition names built by {@link PartName} from the reference's rules); only the event ids and
 * event times, which the metastore assigns, are read back from the notification log.
 *
 * <p>Each step also checks what the metastore logged for it (event count and types), so a Hive
 * behaviour that differs from the reference fails here, named, rather than as a diff later.
 */
public final class Workload {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final List<FieldSchema> COLS = List.of(
      new FieldSchema("id", "bigint", null), new FieldSchema("name", "string", null));
  static final List<FieldSchema> PART_KEYS = List.of(
      new FieldSchema("dt", "string", null), new FieldSchema("region", "string", null));
  private static final List<String> KEY_NAMES = List.of("dt", "region");

  private final MetaClient client;
  private final String warehouse;
  private final List<Descriptor> expected = new ArrayList<>();
  private final List<String> notes = new ArrayList<>();
  private int steps;

  private Workload(MetaClient client, String warehouse) {
    this.client = client;
    this.warehouse = warehouse;
  }

  public static void main(String[] args) throws Exception {
    Args a = new Args(args);
    String uri = a.value("uri", null);
    String prefix = a.value("prefix", "e2e");
    Path out = Path.of(a.value("expected", null));
    Path notesFile = Path.of(a.value("notes", out + ".notes"));
    Path snapshot = Path.of(a.value("snapshot", out + ".snapshot.json"));
    String warehouse = a.value("warehouse", null);
    // --database-rename false leaves out the database-rename step (the sidecar checks on Hive 3.1,
    // where the event that step logs claims a rename the metastore did not make; see renameDatabase).
    boolean databaseRename = Boolean.parseBoolean(a.value("database-rename", "true"));
    a.rejectUnknown();

    try (MetaClient c = connect(uri)) {
      Workload w = new Workload(c, warehouse);
      long from = c.getCurrentNotificationEventId().getEventId();
      w.run(prefix, databaseRename);
      long to = c.getCurrentNotificationEventId().getEventId();
      try (PrintWriter pw = new PrintWriter(Files.newBufferedWriter(out, StandardCharsets.UTF_8))) {
        for (Descriptor d : w.expected) {
          pw.println(JSON.writeValueAsString(d.toJson()));
        }
      }
      Files.write(notesFile, w.notes, StandardCharsets.UTF_8);
      Files.writeString(snapshot, JSON.writeValueAsString(Snapshot.take(c)) + "\n", StandardCharsets.UTF_8);
      System.out.println("WORKLOAD DONE from_event_id=" + from + " to_event_id=" + to + " steps=" + w.steps
          + " descriptors=" + w.expected.size() + " notes=" + w.notes.size());
    }
  }

  static MetaClient connect(String uri) throws Exception {
    Configuration conf = Compat.newConf();
    conf.set("hive.metastore.uris", uri);
    conf.set("hive.metastore.client.socket.timeout", "60s");
    conf.set("hive.metastore.connect.retries", "1");
    conf.set("hive.metastore.failure.retries", "0");
    Kerberos.client(conf);
    return new MetaClient(conf);
  }

  // ---- the workload --------------------------------------------------------------------------

  private void run(String prefix, boolean databaseRename) throws Exception {
    String a = prefix + "_a";
    String b = prefix + "_b";

    step("create database " + a, types("CREATE_DATABASE"),
        () -> client.createDatabase(database(a)),
        ev -> List.of(Descriptor.registerDatabase(a)));
    step("create database " + b, types("CREATE_DATABASE"),
        () -> client.createDatabase(database(b)),
        ev -> List.of(Descriptor.registerDatabase(b)));
    // Hive 2.x has no ALTER_DATABASE event (its listeners have no onAlterDatabase): the alter is
    // logged nowhere, and hmssync maps a parameters-only alter to nothing anyway.
    boolean alterDatabaseEvents = hasClass("org.apache.hadoop.hive.metastore.events.AlterDatabaseEvent");
    if (!alterDatabaseEvents) {
      notes.add("alter database: this Hive has no ALTER_DATABASE event (AlterDatabaseEvent is missing); nothing logged");
    }
    step("alter database " + a + " (parameters only)", alterDatabaseEvents ? types("ALTER_DATABASE") : types(), () -> {
      Database d = client.getDatabase(a);
      d.putToParameters("owner.note", "changed");
      d.setDescription("altered by the hmssync workload");
      client.alterDatabase(a, d);
    }, ev -> List.of());

    // An unpartitioned table: create, alter, insert, rename within and across databases.
    step("create table " + a + ".plain", types("CREATE_TABLE"),
        () -> client.createTable(table(a, "plain", List.of())),
        ev -> List.of(Descriptor.table("REGISTER_TABLE", a, "plain")));
    step("alter table " + a + ".plain (add a column)", types("ALTER_TABLE"), () -> {
      Table t = client.getTable(a, "plain");
      t.getSd().addToCols(new FieldSchema("extra", "string", "added"));
      client.alter_table(a, "plain", t);
    }, ev -> List.of(Descriptor.table("REFRESH_TABLE", a, "plain")));
    step("insert into " + a + ".plain (fire_listener_event)", types("INSERT"),
        () -> insert(a, "plain", null),
        ev -> List.of(Descriptor.table("REFRESH_TABLE", a, "plain")));
    step("rename table " + a + ".plain -> " + a + ".plain_renamed", types("ALTER_TABLE"), () -> {
      Table t = client.getTable(a, "plain");
      t.setTableName("plain_renamed");
      client.alter_table(a, "plain", t);
    }, ev -> List.of(Descriptor.renameTable(a, "plain", a, "plain_renamed")));
    step("rename table " + a + ".plain_renamed -> " + b + ".moved (cross-database)", types("ALTER_TABLE"), () -> {
      Table t = client.getTable(a, "plain_renamed");
      t.setDbName(b);
      t.setTableName("moved");
      client.alter_table(a, "plain_renamed", t);
    }, ev -> List.of(Descriptor.renameTable(a, "plain_renamed", b, "moved")));
    step("create table " + a + ".MixedCase (Hive lower-cases the name)", types("CREATE_TABLE"),
        () -> client.createTable(table(a, "MixedCase", List.of())),
        ev -> List.of(Descriptor.table("REGISTER_TABLE", a, "mixedcase")));

    // A partitioned table with two keys and values that need escaping or are not ASCII.
    String sales = "sales";
    step("create table " + a + "." + sales + " partitioned by (dt, region)", types("CREATE_TABLE"),
        () -> client.createTable(table(a, sales, PART_KEYS)),
        ev -> List.of(Descriptor.table("REGISTER_TABLE", a, sales)));
    List<List<String>> batch = List.of(
        List.of("2024-01-01", "eu"),
        List.of("2024-01-01", "us/west"),
        List.of("2024-01-02", "a=b:c"),
        List.of("2024-01-02", "50% off?"),
        List.of("2024-01-03", "日本"),
        List.of("2024-01-03", "café #1"),
        List.of("2024-01-04", "it's \"quoted\""),
        List.of("2024-01-04", "{x}[y]^*\\"),
        List.of("2024-01-05", "tab\tand\u007fdel"),
        List.of("2024-01-05", "emoji \uD83D\uDE00 ok"));
    step("add " + batch.size() + " partitions to " + a + "." + sales + " in one call", types("ADD_PARTITION"), () -> {
      List<Partition> ps = new ArrayList<>();
      for (List<String> v : batch) {
        ps.add(partition(a, sales, v));
      }
      client.add_partitions(ps);
    }, ev -> List.of(Descriptor.partitions("ADD_PARTITIONS", a, sales, names(batch))));
    List<String> single = List.of("2024-02-01", "apac");
    step("add one partition " + names(List.of(single)), types("ADD_PARTITION"),
        () -> client.add_partition(partition(a, sales, single)),
        ev -> List.of(Descriptor.partitions("ADD_PARTITIONS", a, sales, names(List.of(single)))));
    tryEmptyPartitionValue(a, sales);

    step("alter partition " + name(batch.get(0)) + " (parameters only)", types("ALTER_PARTITION"), () -> {
      Partition p = client.getPartition(a, sales, batch.get(0));
      p.putToParameters("altered", "yes");
      client.alter_partition(a, sales, p);
    }, ev -> List.of(Descriptor.partitions("REFRESH_PARTITIONS", a, sales, names(batch.subList(0, 1)))));
    alterPartitionsBatch(a, sales, batch.subList(1, 3));

    List<String> renamedFrom = batch.get(3);
    List<String> renamedTo = List.of("2024-01-02", "renamed/50%");
    step("rename partition " + name(renamedFrom) + " -> " + name(renamedTo), types("ALTER_PARTITION"), () -> {
      Partition p = client.getPartition(a, sales, renamedFrom);
      p.setValues(renamedTo);
      client.renamePartition(a, sales, renamedFrom, p);
    }, ev -> List.of(
        Descriptor.partitions("DROP_PARTITIONS", a, sales, names(List.of(renamedFrom))),
        Descriptor.partitions("ADD_PARTITIONS", a, sales, names(List.of(renamedTo)))));

    step("insert into partition " + name(batch.get(4)), types("INSERT"),
        () -> insert(a, sales, batch.get(4)),
        ev -> insertIntoPartition(ev, a, sales, batch.get(4)));
    reload(a, sales, batch.get(5));

    step("drop partition " + name(batch.get(6)) + " by values", types("DROP_PARTITION"),
        () -> client.dropPartition(a, sales, batch.get(6), false),
        ev -> List.of(Descriptor.partitions("DROP_PARTITIONS", a, sales, names(batch.subList(6, 7)))));
    step("drop partition " + name(batch.get(7)) + " by name", types("DROP_PARTITION"),
        () -> client.dropPartition(a, sales, Warehouse.makePartName(PART_KEYS, batch.get(7)), false),
        ev -> List.of(Descriptor.partitions("DROP_PARTITIONS", a, sales, names(batch.subList(7, 8)))));

    // A view: create, redefine (hmssync treats it as a re-created view), rename, drop.
    step("create view " + a + ".v", types("CREATE_TABLE"),
        () -> client.createTable(view(a, "v", "select id from " + a + "." + sales)),
        ev -> List.of(Descriptor.table("REGISTER_TABLE", a, "v")));
    step("redefine view " + a + ".v", types("ALTER_TABLE"), () -> {
      Table t = client.getTable(a, "v");
      t.setViewOriginalText("select id, name from " + a + "." + sales);
      t.setViewExpandedText("select `sales`.`id`, `sales`.`name` from `" + a + "`.`" + sales + "`");
      client.alter_table(a, "v", t);
    }, ev -> List.of(Descriptor.renameTable(a, "v", a, "v")));
    step("rename view " + a + ".v -> " + a + ".v2", types("ALTER_TABLE"), () -> {
      Table t = client.getTable(a, "v");
      t.setTableName("v2");
      client.alter_table(a, "v", t);
    }, ev -> List.of(Descriptor.renameTable(a, "v", a, "v2")));

    if (databaseRename) {
      renameDatabase(prefix + "_c", prefix + "_c_renamed");
    } else {
      notes.add("rename database: left out (--database-rename false)");
    }

    // Tear down: what is left ends in drops, including a partitioned table with partitions.
    step("drop view " + a + ".v2", types("DROP_TABLE"),
        () -> client.dropTable(a, "v2"),
        ev -> List.of(Descriptor.table("UNREGISTER_TABLE", a, "v2")));
    step("drop table " + b + ".moved", types("DROP_TABLE"),
        () -> client.dropTable(b, "moved"),
        ev -> List.of(Descriptor.table("UNREGISTER_TABLE", b, "moved")));
    step("drop database " + b, types("DROP_DATABASE"),
        () -> client.dropDatabase(b),
        ev -> List.of(Descriptor.unregisterDatabase(b)));

    // What stays, so that state-convergence checks have something to compare: database a with
    // the partitioned table, a second partitioned table and an unpartitioned one.
    step("create table " + a + ".events partitioned by (dt, region)", types("CREATE_TABLE"),
        () -> client.createTable(table(a, "events", PART_KEYS)),
        ev -> List.of(Descriptor.table("REGISTER_TABLE", a, "events")));
    List<List<String>> more = List.of(List.of("2024-03-01", "eu"), List.of("2024-03-01", "Zürich/Genève"));
    step("add " + more.size() + " partitions to " + a + ".events", types("ADD_PARTITION"), () -> {
      List<Partition> ps = new ArrayList<>();
      for (List<String> v : more) {
        ps.add(partition(a, "events", v));
      }
      client.add_partitions(ps);
    }, ev -> List.of(Descriptor.partitions("ADD_PARTITIONS", a, "events", names(more))));
    step("drop table " + a + ".mixedcase", types("DROP_TABLE"),
        () -> client.dropTable(a, "mixedcase"),
        ev -> List.of(Descriptor.table("UNREGISTER_TABLE", a, "mixedcase")));
  }

  /** alter_partitions: one event per partition (Hive ≤ 4.0) or one ALTER_PARTITIONS batch event. */
  private void alterPartitionsBatch(String db, String tbl, List<List<String>> vals) throws Exception {
    String what = "alter " + vals.size() + " partitions in one alter_partitions call";
    long before = currentId();
    List<Partition> ps = new ArrayList<>();
    for (List<String> v : vals) {
      Partition p = client.getPartition(db, tbl, v);
      p.putToParameters("batch", "yes");
      ps.add(p);
    }
    client.alter_partitions(db, tbl, ps);
    List<NotificationEvent> evs = eventsSince(before);
    steps++;
    if (evs.size() == 1 && evs.get(0).getEventType().equals("ALTER_PARTITIONS")) {
      add(evs.get(0), Descriptor.partitions("REFRESH_PARTITIONS", db, tbl, names(vals)));
      notes.add(what + ": one ALTER_PARTITIONS event");
      return;
    }
    checkTypes(what, evs, Collections.nCopies(vals.size(), "ALTER_PARTITION"));
    for (int i = 0; i < vals.size(); i++) {
      add(evs.get(i), Descriptor.partitions("REFRESH_PARTITIONS", db, tbl, names(vals.subList(i, i + 1))));
    }
    notes.add(what + ": one ALTER_PARTITION event per partition");
  }

  /** The reference says an empty value is named __HIVE_DEFAULT_PARTITION__; the metastore may refuse it. */
  private void tryEmptyPartitionValue(String db, String tbl) throws Exception {
    List<String> v = List.of("", "eu");
    long before = currentId();
    try {
      client.add_partition(partition(db, tbl, v));
    } catch (Exception e) {
      requireNoEvents("add partition with an empty value", before);
      notes.add("add partition with an empty value: refused: " + oneLine(e));
      return;
    }
    List<NotificationEvent> evs = eventsSince(before);
    steps++;
    checkTypes("add partition with an empty value", evs, List.of("ADD_PARTITION"));
    add(evs.get(0), Descriptor.partitions("ADD_PARTITIONS", db, tbl, names(List.of(v))));
    notes.add("add partition with an empty value: accepted, named " + name(v));
    step("drop the partition with the empty value", types("DROP_PARTITION"),
        () -> client.dropPartition(db, tbl, v, false),
        ev -> List.of(Descriptor.partitions("DROP_PARTITIONS", db, tbl, names(List.of(v)))));
  }

  /** A database rename is accepted by some metastores only; either answer is recorded. */
  private void renameDatabase(String from, String to) throws Exception {
    step("create database " + from + " (for the rename)", types("CREATE_DATABASE"),
        () -> client.createDatabase(database(from)),
        ev -> List.of(Descriptor.registerDatabase(from)));
    long before = currentId();
    Exception refused = null;
    try {
      Database d = client.getDatabase(from);
      d.setName(to);
      client.alterDatabase(from, d);
    } catch (Exception e) {
      refused = e;
    }
    List<NotificationEvent> evs = eventsSince(before);
    steps++;
    String what = "rename database " + from + " -> " + to;
    String left = from;
    if (refused != null) {
      requireNoEvents(what, before);
      notes.add(what + ": refused: " + oneLine(refused));
    } else if (dbExists(to) && !dbExists(from)) {
      checkTypes(what, evs, List.of("ALTER_DATABASE"));
      add(evs.get(0), Descriptor.renameDatabase(from, to));
      left = to;
      notes.add(what + ": accepted");
    } else {
      // The call succeeded but the name stayed (Hive 3.1 ignores a new name in alter_database).
      // Hive 3.1 still logs an ALTER_DATABASE whose after-object carries the requested name, and
      // hmssync decodes messages only (reference §5), so it reports the rename the message claims.
      for (NotificationEvent e : evs) {
        if (!e.getEventType().equals("ALTER_DATABASE")) {
          throw new IllegalStateException(what + ": unexpected event " + e.getEventType() + " " + e.getEventId());
        }
        add(e, Descriptor.renameDatabase(from, to));
      }
      notes.add(what + ": the call succeeded but the database kept its name (" + evs.size()
          + " ALTER_DATABASE events logged)");
    }
    String dropped = left;
    step("drop database " + dropped, types("DROP_DATABASE"),
        () -> client.dropDatabase(dropped),
        ev -> List.of(Descriptor.unregisterDatabase(dropped)));
  }

  /**
   * What an INSERT into one partition maps to. Hive 3+ writes the partition object (ptnObjJson):
   * REFRESH_PARTITIONS. Hive 2.x writes only a key-to-value map (partKeyVals) and no table object,
   * so the partition's name cannot be built in the table's key order (reference §4): hmssync
   * refreshes the table, which holds the partition.
   */
  private List<Descriptor> insertIntoPartition(NotificationEvent ev, String db, String tbl, List<String> vals) throws Exception {
    if (JSON.readTree(messageText(ev)).has("ptnObjJson")) {
      return List.of(Descriptor.partitions("REFRESH_PARTITIONS", db, tbl, names(List.of(vals))));
    }
    notes.add("insert into a partition: the INSERT message has no ptnObjJson (partKeyVals only): REFRESH_TABLE expected");
    return List.of(Descriptor.table("REFRESH_TABLE", db, tbl));
  }

  /** The event's message as JSON text: gzip(json-2.0) messages are base64 of gzip (reference §3). */
  private static String messageText(NotificationEvent ev) throws java.io.IOException {
    String m = ev.getMessage();
    if (!m.startsWith("H4sI")) {
      return m;
    }
    byte[] gz = java.util.Base64.getDecoder().decode(m);
    try (java.util.zip.GZIPInputStream in = new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(gz))) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static boolean hasClass(String name) {
    try {
      Class.forName(name, false, Workload.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  /** RELOAD events exist from Hive 4 (fire_listener_event with refreshEvent); older clients lack the call. */
  private void reload(String db, String tbl, List<String> partVals) throws Exception {
    Method refresh;
    try {
      refresh = FireEventRequestData.class.getMethod("refreshEvent", boolean.class);
    } catch (NoSuchMethodException e) {
      notes.add("reload: this Hive has no refreshEvent in FireEventRequestData; skipped");
      return;
    }
    step("reload table " + db + "." + tbl + " (fire_listener_event refreshEvent)", types("RELOAD"), () -> {
      FireEventRequest rq = new FireEventRequest(true, (FireEventRequestData) refresh.invoke(null, true));
      rq.setDbName(db);
      rq.setTableName(tbl);
      client.fireListenerEvent(rq);
    }, ev -> List.of(Descriptor.table("REFRESH_TABLE", db, tbl)));
    step("reload partition " + name(partVals), types("RELOAD"), () -> {
      FireEventRequest rq = new FireEventRequest(true, (FireEventRequestData) refresh.invoke(null, true));
      rq.setDbName(db);
      rq.setTableName(tbl);
      rq.setPartitionVals(partVals);
      client.fireListenerEvent(rq);
    }, ev -> List.of(Descriptor.partitions("REFRESH_PARTITIONS", db, tbl, names(List.of(partVals)))));
  }

  private void insert(String db, String tbl, List<String> partVals) throws Exception {
    String file = warehouse + "/" + db + "/" + tbl + "/data-" + System.nanoTime() + ".txt";
    InsertEventRequestData data = new InsertEventRequestData(List.of(file));
    // Hive 3.1's DbNotificationListener indexes the checksum list by file (it fails on an empty
    // list); Hive's own writers always send one per file.
    data.setFilesAddedChecksum(List.of("0"));
    FireEventRequest rq = new FireEventRequest(true, FireEventRequestData.insertData(data));
    rq.setDbName(db);
    rq.setTableName(tbl);
    if (partVals != null) {
      rq.setPartitionVals(partVals);
    }
    client.fireListenerEvent(rq);
  }

  // ---- step bookkeeping ----------------------------------------------------------------------

  interface Action {
    void run() throws Exception;
  }

  interface Expectation {
    List<Descriptor> of(NotificationEvent event) throws Exception;
  }

  private void step(String what, List<String> eventTypes, Action op, Expectation exp) throws Exception {
    long before = currentId();
    try {
      op.run();
    } catch (Exception e) {
      throw new IllegalStateException("step \"" + what + "\": the metastore refused: " + oneLine(e), e);
    }
    List<NotificationEvent> evs = eventsSince(before);
    checkTypes(what, evs, eventTypes);
    for (NotificationEvent ev : evs) {
      for (Descriptor d : exp.of(ev)) {
        add(ev, d);
      }
    }
    steps++;
    System.out.println("step " + steps + ": " + what + " -> events " + ids(evs));
  }

  private void add(NotificationEvent ev, Descriptor d) {
    d.eventId = ev.getEventId();
    d.updateTime = ev.getEventTime();
    expected.add(d);
  }

  private void checkTypes(String what, List<NotificationEvent> evs, List<String> want) {
    List<String> got = new ArrayList<>();
    for (NotificationEvent e : evs) {
      got.add(e.getEventType());
    }
    if (!got.equals(want)) {
      throw new IllegalStateException("step \"" + what + "\": the metastore logged events " + got
          + " (ids " + ids(evs) + "), the workload expects " + want
          + "; check the listener settings or update the workload with what this Hive does");
    }
  }

  private void requireNoEvents(String what, long before) throws Exception {
    List<NotificationEvent> evs = eventsSince(before);
    if (!evs.isEmpty()) {
      throw new IllegalStateException("step \"" + what + "\": refused but logged events " + ids(evs));
    }
  }

  private long currentId() throws Exception {
    return client.getCurrentNotificationEventId().getEventId();
  }

  private List<NotificationEvent> eventsSince(long before) throws Exception {
    long now = currentId();
    if (now == before) {
      return List.of();
    }
    List<NotificationEvent> evs = client.getNextNotification(before, (int) (now - before), null).getEvents();
    return evs == null ? List.of() : evs;
  }

  private boolean dbExists(String name) throws Exception {
    return client.getAllDatabases().contains(name);
  }

  // ---- objects -------------------------------------------------------------------------------

  private Database database(String name) {
    Database d = new Database();
    d.setName(name);
    d.setDescription("hmssync end-to-end workload");
    d.setLocationUri(warehouse + "/" + name + ".db");
    d.setParameters(new HashMap<>());
    return d;
  }

  private Table table(String db, String name, List<FieldSchema> partKeys) {
    Table t = new Table();
    t.setDbName(db);
    t.setTableName(name);
    t.setOwner("hmssync");
    t.setTableType("EXTERNAL_TABLE");
    t.setParameters(new HashMap<>(Map.of("EXTERNAL", "TRUE")));
    t.setPartitionKeys(new ArrayList<>(partKeys));
    t.setSd(storage(warehouse + "/" + db + ".db/" + name.toLowerCase()));
    return t;
  }

  private Table view(String db, String name, String text) {
    Table t = new Table();
    t.setDbName(db);
    t.setTableName(name);
    t.setOwner("hmssync");
    t.setTableType("VIRTUAL_VIEW");
    t.setViewOriginalText(text);
    t.setViewExpandedText(text);
    t.setParameters(new HashMap<>());
    t.setPartitionKeys(new ArrayList<>());
    StorageDescriptor sd = storage(null);
    t.setSd(sd);
    return t;
  }

  /** A partition of db.tbl with the given values (also Backlog's). */
  static Partition partition(String db, String tbl, List<String> values) {
    Partition p = new Partition();
    p.setDbName(db);
    p.setTableName(tbl);
    p.setValues(new ArrayList<>(values));
    p.setParameters(new HashMap<>());
    p.setSd(storage(null));
    return p;
  }

  /** The storage of every table and partition these programs write (also Backlog's). */
  static StorageDescriptor storage(String location) {
    StorageDescriptor sd = new StorageDescriptor();
    sd.setCols(new ArrayList<>(COLS));
    sd.setLocation(location);
    sd.setInputFormat("org.apache.hadoop.mapred.TextInputFormat");
    sd.setOutputFormat("org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat");
    SerDeInfo serde = new SerDeInfo();
    serde.setSerializationLib("org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe");
    serde.setParameters(new HashMap<>(Map.of("serialization.format", "1")));
    sd.setSerdeInfo(serde);
    sd.setParameters(new HashMap<>());
    return sd;
  }

  // ---- names ---------------------------------------------------------------------------------

  /** The reference's name, cross-checked against Hive's own so that a wrong reference fails here. */
  private static String name(List<String> values) {
    String ours = PartName.make(KEY_NAMES, values);
    try {
      String hive = Warehouse.makePartName(PART_KEYS, values);
      if (!ours.equals(hive)) {
        throw new IllegalStateException("partition name of " + values + ": reference rule gives " + ours
            + ", Hive's Warehouse.makePartName gives " + hive + "; the reference (hms.md §4) is wrong");
      }
    } catch (org.apache.hadoop.hive.metastore.api.MetaException e) {
      throw new IllegalStateException("Hive cannot name partition " + values, e);
    }
    return ours;
  }

  private static List<String> names(List<List<String>> values) {
    List<String> out = new ArrayList<>();
    for (List<String> v : values) {
      out.add(name(v));
    }
    return out;
  }

  private static List<String> types(String... t) {
    return Arrays.asList(t);
  }

  private static String ids(List<NotificationEvent> evs) {
    StringBuilder b = new StringBuilder("[");
    for (NotificationEvent e : evs) {
      if (b.length() > 1) {
        b.append(',');
      }
      b.append(e.getEventId());
    }
    return b.append(']').toString();
  }

  static String oneLine(Throwable e) {
    String m = e.getClass().getSimpleName() + ": " + e.getMessage();
    return m.replace('\n', ' ');
  }

  /** The metastore's current state as db -> table -> sorted partition names (the fetest Snapshot shape). */
  static final class Snapshot {
    static Map<String, Map<String, List<String>>> take(MetaClient c) throws Exception {
      Map<String, Map<String, List<String>>> out = new TreeMap<>();
      for (String db : c.getAllDatabases()) {
        Map<String, List<String>> tables = new TreeMap<>();
        for (String t : c.getAllTables(db)) {
          List<String> parts = new ArrayList<>(c.listPartitionNames(db, t, (short) -1));
          Collections.sort(parts);
          tables.put(t, parts);
        }
        out.put(db, tables);
      }
      return out;
    }
  }
}
