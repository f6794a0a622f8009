package hmssync.realhms;

import java.util.HashMap;

import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.CompactionInfoStruct;
import org.apache.hadoop.hive.metastore.api.CompactionResponse;
import org.apache.hadoop.hive.metastore.api.CompactionType;
import org.apache.hadoop.hive.metastore.api.FindNextCompactRequest;
import org.apache.hadoop.hive.metastore.api.OptionalCompactionInfoStruct;
import org.apache.hadoop.hive.metastore.api.TxnType;

/**
 * A compaction's metastore side as Hive 4's compactor worker makes it, without the worker (which
 * needs Hive's query engine): {@code TxnCompact --uri U --db D --table T [--partition NAME]} enqueues
 * a MAJOR compaction (compact2), takes it as a worker (find_next_compact), opens a COMPACTION
 * transaction, records it on the compaction (update_compactor_state) and commits it, which makes
 * the metastore log OPEN_TXN, COMMIT_TXN and then COMMIT_COMPACTION_EVENT; then marks it compacted
 * and cleaned (no events), so that the same partition can be compacted again. Prints
 * {@code TXN step=compact txn=ID compaction_id=C event_id=N}. Hive 3.1 has no such event.
 */
public final class TxnCompact {
  public static void main(String[] args) throws Exception {
    Args a = new Args(args);
    String uri = a.value("uri", null);
    String db = a.value("db", null);
    String table = a.value("table", null);
    String partition = a.value("partition", "");
    a.rejectUnknown();
    try (HiveMetaStoreClient c = Workload.connect(uri)) {
      CompactionResponse r = c.compact2(db, table, partition.isEmpty() ? null : partition, CompactionType.MAJOR, new HashMap<>());
      FindNextCompactRequest rq = new FindNextCompactRequest();
      rq.setWorkerId("hmssync-realhms-0");
      rq.setWorkerVersion("hmssync");
      OptionalCompactionInfoStruct next = c.findNextCompact(rq);
      if (next == null || !next.isSetCi()) {
        throw new IllegalStateException("find_next_compact found no compaction after compact2 of " + db + "." + table
            + " (id " + r.getId() + ", state " + r.getState() + ")");
      }
      CompactionInfoStruct ci = next.getCi();
      long txn = c.openTxn("hmssync", TxnType.COMPACTION);
      c.updateCompactorState(ci, txn);
      c.commitTxn(txn);
      // The worker's and the cleaner's ends, so that the partition can be compacted again.
      c.markCompacted(ci);
      c.markCleaned(ci);
      System.out.println("TXN step=compact txn=" + txn + " compaction_id=" + ci.getId()
          + " event_id=" + c.getCurrentNotificationEventId().getEventId());
    }
  }
}
