package hmssync.realhms;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * One write of a pipeline, with the real Hive client, for the wait check of sidecar-checks.sh:
 * {@code AddPartition --uri URI --db D --table T --values dt,region --warehouse W} adds the partition
 * (dt, region) to D.T, creating the database and the external table (partitioned by dt, region)
 * first when they do not exist, and prints {@code ADDED event_id=N}: the metastore's current event
 * id once the partition is added.
 */
public final class AddPartition {
  public static void main(String[] args) throws Exception {
    Args a = new Args(args);
    String uri = a.value("uri", null);
    String db = a.value("db", null);
    String table = a.value("table", null);
    List<String> values = List.of(a.value("values", null).split(","));
    String warehouse = a.value("warehouse", null);
    a.rejectUnknown();
    try (MetaClient c = Workload.connect(uri)) {
      try {
        c.getDatabase(db);
      } catch (NoSuchObjectException e) {
        Database d = new Database();
        d.setName(db);
        d.setDescription("hmssync wait check");
        d.setLocationUri(warehouse + "/" + db + ".db");
        d.setParameters(new HashMap<>());
        c.createDatabase(d);
      }
      if (!c.tableExists(db, table)) {
        Table t = new Table();
        t.setDbName(db);
        t.setTableName(table);
        t.setOwner("hmssync");
        t.setTableType("EXTERNAL_TABLE");
        t.setParameters(new HashMap<>(Map.of("EXTERNAL", "TRUE")));
        t.setPartitionKeys(new ArrayList<>(Workload.PART_KEYS));
        t.setSd(Workload.storage(warehouse + "/" + db + ".db/" + table));
        c.createTable(t);
      }
      c.add_partition(Workload.partition(db, table, values));
      System.out.println("ADDED event_id=" + c.getCurrentNotificationEventId().getEventId());
    }
  }
}
