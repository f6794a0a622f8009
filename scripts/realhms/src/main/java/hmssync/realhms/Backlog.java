package hmssync.realhms;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.hive.metastore.Warehouse;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.FireEventRequest;
import org.apache.hadoop.hive.metastore.api.FireEventRequestData;
import org.apache.hadoop.hive.metastore.api.InsertEventRequestData;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * Writes a backlog of at least {@code --events} notification events through the real Hive
 * client, for the real-metastore benchmark (bench.sh): mostly partition events (ADD_PARTITION,
 * ALTER_PARTITION, DROP_PARTITION) over {@code --tables} partitioned tables in
 * {@code --databases} databases, plus CREATE_TABLE, ALTER_TABLE and INSERT events. The first
 * database ({@code PREFIX_d0}) holds {@code --small-share} percent of the tables, and so about
 * that share of the events, so that a filter measurement can include just it.
 *
 * <p>{@code --threads} workers, each with its own client and its own tables, write
 * concurrently: the metastore serialises the notification sequence, but the calls' other work
 * (Derby, the warehouse directories) overlaps. alter_partitions is the batch call that makes
 * the backlog quick to write: one call over a table's newest {@code --alter-batch} partitions,
 * one ALTER_PARTITION event per partition in Hive 4.0 (one ALTER_PARTITIONS event where Hive
 * batches them), as a job updating many partitions' parameters does; so ALTER_PARTITION is the
 * most frequent event type. The workers stop once the log has grown by the target, so the
 * backlog overshoots it by at most one cycle per worker.
 *
 * <p>Prints {@code BACKLOG DONE from_event_id=N to_event_id=M events=K seconds=S} last, after
 * reading the log back and counting its events by type and database (one line each).
 */
public final class Backlog {
  /** Partitions added one call each per cycle, then altered in one alter_partitions call. */
  private static final int ADDS_PER_CYCLE = 6;
  /** Of those, dropped one call each per cycle (the rest stay, so tables grow). */
  private static final int DROPS_PER_CYCLE = 2;

  private final String uri;
  private final String warehouse;
  private final long from;
  private final long target;
  private final int alterBatch;
  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicLong calls = new AtomicLong();

  private Backlog(String uri, String warehouse, long from, long target, int alterBatch) {
    this.uri = uri;
    this.alterBatch = alterBatch;
    this.warehouse = warehouse;
    this.from = from;
    this.target = target;
  }

  public static void main(String[] args) throws Exception {
    Args a = new Args(args);
    String uri = a.value("uri", null);
    int events = a.intValue("events", 20000);
    String prefix = a.value("prefix", "bench");
    int databases = a.intValue("databases", 4);
    int tables = a.intValue("tables", 32);
    int smallShare = a.intValue("small-share", 15);
    int threads = a.intValue("threads", 8);
    int alterBatch = a.intValue("alter-batch", 30);
    String warehouse = a.value("warehouse", null);
    a.rejectUnknown();
    if (events < 1 || databases < 2 || tables < databases || smallShare < 1 || smallShare > 50 || threads < 1 || alterBatch < 1) {
      throw new IllegalArgumentException("want --events >= 1, --databases >= 2, --tables >= --databases, "
          + "--small-share 1..50 (percent), --threads >= 1, --alter-batch >= 1");
    }

    long t0 = System.nanoTime();
    long from;
    List<String[]> all = new ArrayList<>(); // {db, table}
    try (MetaClient c = Workload.connect(uri)) {
      from = c.getCurrentNotificationEventId().getEventId();
      // Tables per database: the first gets smallShare percent (at least one), the others share
      // the rest evenly.
      int small = Math.max(1, Math.round(tables * smallShare / 100f));
      for (int d = 0; d < databases; d++) {
        String db = prefix + "_d" + d;
        c.createDatabase(database(db, warehouse));
        int n = d == 0 ? small : (tables - small) / (databases - 1) + (d - 1 < (tables - small) % (databases - 1) ? 1 : 0);
        for (int t = 0; t < n; t++) {
          String tbl = "t" + t;
          c.createTable(table(db, tbl, warehouse, Workload.PART_KEYS));
          all.add(new String[] {db, tbl});
        }
      }
    }
    Backlog b = new Backlog(uri, warehouse, from, events, alterBatch);
    // Tables are dealt to the workers round-robin, so each worker has tables of several databases.
    List<List<String[]>> mine = new ArrayList<>();
    for (int w = 0; w < threads; w++) {
      mine.add(new ArrayList<>());
    }
    for (int i = 0; i < all.size(); i++) {
      mine.get(i % threads).add(all.get(i));
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<Void>> done = new ArrayList<>();
    for (int w = 0; w < threads; w++) {
      List<String[]> ts = mine.get(w);
      int worker = w;
      if (ts.isEmpty()) {
        continue;
      }
      done.add(pool.submit(() -> {
        b.work(worker, ts);
        return null;
      }));
    }
    pool.shutdown();
    long lastSay = System.nanoTime();
    try (MetaClient c = Workload.connect(uri)) {
      while (!pool.awaitTermination(1, TimeUnit.SECONDS)) {
        if (System.nanoTime() - lastSay > 10_000_000_000L) {
          lastSay = System.nanoTime();
          long n = c.getCurrentNotificationEventId().getEventId() - from;
          double s = (lastSay - t0) / 1e9;
          System.out.printf("backlog: %d events in %.0fs (%.0f/s), %d calls%n", n, s, n / s, b.calls.get());
        }
      }
    }
    for (Future<Void> f : done) {
      try {
        f.get();
      } catch (java.util.concurrent.ExecutionException e) {
        throw new IllegalStateException("a backlog worker failed: " + e.getCause(), e.getCause());
      }
    }
    double seconds = (System.nanoTime() - t0) / 1e9;

    try (MetaClient c = Workload.connect(uri)) {
      long to = c.getCurrentNotificationEventId().getEventId();
      Map<String, Long> byType = new TreeMap<>();
      Map<String, Long> byDb = new TreeMap<>();
      long n = 0;
      long bytes = 0;
      for (long after = from; after < to;) {
        List<NotificationEvent> evs = c.getNextNotification(after, 1000, null).getEvents();
        if (evs == null || evs.isEmpty()) {
          throw new IllegalStateException("reading the backlog back: no events after " + after + " although the current id is " + to);
        }
        for (NotificationEvent e : evs) {
          byType.merge(e.getEventType(), 1L, Long::sum);
          byDb.merge(e.isSetDbName() ? e.getDbName() : "(none)", 1L, Long::sum);
          bytes += e.getMessage().length();
          n++;
          after = e.getEventId();
        }
      }
      System.out.println("BACKLOG by_type " + byType);
      System.out.println("BACKLOG by_db " + byDb);
      System.out.printf("BACKLOG DONE from_event_id=%d to_event_id=%d events=%d message_chars=%d calls=%d seconds=%.1f%n",
          from, to, n, bytes, b.calls.get(), seconds);
    }
  }

  /** One worker: cycles over its tables until the log has grown by the target. */
  private void work(int worker, List<String[]> tables) throws Exception {
    try (MetaClient c = Workload.connect(uri)) {
      int[] next = new int[tables.size()]; // next partition number per table
      List<List<List<String>>> live = new ArrayList<>(); // each table's partitions, oldest first
      for (int i = 0; i < tables.size(); i++) {
        live.add(new ArrayList<>());
      }
      for (int cycle = 0; !stop.get(); cycle++) {
        int ti = cycle % tables.size();
        String[] dt = tables.get(ti);
        cycle(c, dt[0], dt[1], worker, cycle / tables.size(), next, ti, live.get(ti));
        if (c.getCurrentNotificationEventId().getEventId() - from >= target) {
          stop.set(true);
        }
      }
    }
  }

  /**
   * One cycle on one table: ADDS_PER_CYCLE add_partition calls (one event each); one
   * alter_partitions call over the table's newest alterBatch partitions (one event per
   * partition); an INSERT into the newest; DROPS_PER_CYCLE drop_partition calls on the oldest.
   * Every 4th round also an ALTER_TABLE; every 10th an add_partitions call with 5 partitions (one
   * event) and a new unpartitioned table (CREATE_TABLE).
   */
  private void cycle(MetaClient c, String db, String tbl, int worker, int round, int[] next, int ti,
      List<List<String>> live) throws Exception {
    for (int i = 0; i < ADDS_PER_CYCLE; i++) {
      List<String> v = values(next[ti]++);
      c.add_partition(Workload.partition(db, tbl, v));
      calls.incrementAndGet();
      live.add(v);
    }
    // The partitions as the metastore holds them (locations, times), changed in one parameter.
    List<String> names = new ArrayList<>();
    for (List<String> v : live.subList(Math.max(0, live.size() - alterBatch), live.size())) {
      names.add(Warehouse.makePartName(Workload.PART_KEYS, v));
    }
    List<Partition> ps = c.getPartitionsByNames(db, tbl, names);
    for (Partition p : ps) {
      p.putToParameters("round", Integer.toString(round));
    }
    c.alter_partitions(db, tbl, ps);
    calls.addAndGet(2);
    insert(c, db, tbl, live.get(live.size() - 1));
    calls.incrementAndGet();
    for (int i = 0; i < DROPS_PER_CYCLE && live.size() > ADDS_PER_CYCLE; i++) {
      c.dropPartition(db, tbl, live.remove(0), false);
      calls.incrementAndGet();
    }
    if (round % 4 == 3) {
      Table t = c.getTable(db, tbl);
      t.putToParameters("bench.round", Integer.toString(round));
      c.alter_table(db, tbl, t);
      calls.addAndGet(2);
    }
    if (round % 10 == 9) {
      List<Partition> more = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        List<String> v = values(next[ti]++);
        more.add(Workload.partition(db, tbl, v));
        live.add(v);
      }
      c.add_partitions(more);
      c.createTable(table(db, "u" + worker + "_" + tbl + "_" + round, warehouse, List.of()));
      calls.addAndGet(2);
    }
  }

  /** Partition values: a day and a region, unique per table for each n. */
  private static List<String> values(int n) {
    return List.of(String.format("2026-%02d-%02d", 1 + n / 28 % 12, 1 + n % 28), "r" + n / (28 * 12));
  }

  private void insert(MetaClient c, String db, String tbl, List<String> partVals) throws Exception {
    String file = warehouse + "/" + db + ".db/" + tbl + "/data-" + System.nanoTime() + ".txt";
    InsertEventRequestData data = new InsertEventRequestData(List.of(file));
    data.setFilesAddedChecksum(List.of("0"));
    FireEventRequest rq = new FireEventRequest(true, FireEventRequestData.insertData(data));
    rq.setDbName(db);
    rq.setTableName(tbl);
    rq.setPartitionVals(partVals);
    c.fireListenerEvent(rq);
  }

  private static Database database(String name, String warehouse) {
    Database d = new Database();
    d.setName(name);
    d.setDescription("hmssync real-metastore benchmark backlog");
    d.setLocationUri(warehouse + "/" + name + ".db");
    d.setParameters(new HashMap<>());
    return d;
  }

  private static Table table(String db, String name, String warehouse, List<FieldSchema> partKeys) {
    Table t = new Table();
    t.setDbName(db);
    t.setTableName(name);
    t.setOwner("hmssync");
    t.setTableType("EXTERNAL_TABLE");
    t.setParameters(new HashMap<>(Map.of("EXTERNAL", "TRUE")));
    t.setPartitionKeys(new ArrayList<>(partKeys));
    t.setSd(Workload.storage(warehouse + "/" + db + ".db/" + name.toLowerCase()));
    return t;
  }
}
