package hmssync.realhms;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * One step of a transaction, with the real Hive client, for txn-checks.sh. Each prints one line
 * {@code TXN step=S ... event_id=N}, N the metastore's current event id after the step:
 * <ul>
 *   <li>{@code TxnWorkload create --uri U --db D --table T --warehouse W [--partitioned true]}: the
 *       database (if missing) and an insert-only transactional managed table
 *       ({@code transactional=true}, {@code transactional_properties=insert_only}; full ACID needs
 *       Hive's query engine, which a standalone metastore does not have); with --partitioned, one
 *       partition dt=2024-01-01/region=eu is added;
 *   <li>{@code TxnWorkload open --uri U}: open_txns for one transaction; prints {@code txn=ID};
 *   <li>{@code TxnWorkload alloc --uri U --txn ID --db D --table T}: allocate_table_write_ids;
 *       prints {@code write_id=W};
 *   <li>{@code TxnWorkload commit --uri U --txn ID} / {@code abort ...}: commit_txn / abort_txns.
 * </ul>
 */
public final class TxnWorkload {
  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      throw new IllegalArgumentException("want a step: create, open, alloc, commit or abort");
    }
    String step = args[0];
    Args a = new Args(java.util.Arrays.copyOfRange(args, 1, args.length));
    String uri = a.value("uri", null);
    String out;
    try (HiveMetaStoreClient c = Workload.connect(uri)) {
      switch (step) {
        case "create" -> out = create(c, a);
        case "open" -> {
          a.rejectUnknown();
          out = "txn=" + c.openTxn("hmssync");
        }
        case "alloc" -> {
          long txn = Long.parseLong(a.value("txn", null));
          String db = a.value("db", null);
          String table = a.value("table", null);
          a.rejectUnknown();
          out = "txn=" + txn + " write_id=" + c.allocateTableWriteId(txn, db, table);
        }
        case "commit" -> {
          long txn = Long.parseLong(a.value("txn", null));
          a.rejectUnknown();
          c.commitTxn(txn);
          out = "txn=" + txn;
        }
        case "abort" -> {
          long txn = Long.parseLong(a.value("txn", null));
          a.rejectUnknown();
          c.abortTxns(List.of(txn));
          out = "txn=" + txn;
        }
        default -> throw new IllegalArgumentException("unknown step " + step + ": want create, open, alloc, commit or abort");
      }
      System.out.println("TXN step=" + step + " " + out + " event_id=" + c.getCurrentNotificationEventId().getEventId());
    }
  }

  private static String create(HiveMetaStoreClient c, Args a) throws Exception {
    String db = a.value("db", null);
    String table = a.value("table", null);
    String warehouse = a.value("warehouse", null);
    boolean partitioned = Boolean.parseBoolean(a.value("partitioned", "false"));
    a.rejectUnknown();
    try {
      c.getDatabase(db);
    } catch (NoSuchObjectException e) {
      Database d = new Database();
      d.setName(db);
      d.setDescription("hmssync transaction checks");
      d.setLocationUri(warehouse + "/" + db + ".db");
      d.setParameters(new HashMap<>());
      c.createDatabase(d);
    }
    Table t = new Table();
    t.setDbName(db);
    t.setTableName(table);
    t.setOwner("hmssync");
    t.setTableType("MANAGED_TABLE");
    t.setParameters(new HashMap<>(Map.of("transactional", "true", "transactional_properties", "insert_only")));
    t.setPartitionKeys(new ArrayList<>(partitioned ? Workload.PART_KEYS : List.of()));
    t.setSd(Workload.storage(warehouse + "/" + db + ".db/" + table));
    c.createTable(t);
    Table got = c.getTable(db, table);
    if (partitioned) {
      c.add_partition(Workload.partition(db, table, List.of("2024-01-01", "eu")));
    }
    return "db=" + db + " table=" + table + " type=" + got.getTableType()
        + " transactional=" + got.getParameters().get("transactional")
        + " properties=" + got.getParameters().get("transactional_properties");
  }
}
