package hmssync.realhms;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HMSHandler;
import org.apache.hadoop.hive.metastore.MetaStoreEventListenerConstants;
import org.apache.hadoop.hive.metastore.RawStore;
import org.apache.hadoop.hive.metastore.TransactionalMetaStoreEventListener;
import org.apache.hadoop.hive.metastore.Warehouse;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf.ConfVars;
import org.apache.hadoop.hive.metastore.events.AbortTxnEvent;
import org.apache.hadoop.hive.metastore.events.AddPartitionEvent;
import org.apache.hadoop.hive.metastore.events.AllocWriteIdEvent;
import org.apache.hadoop.hive.metastore.events.CommitCompactionEvent;
import org.apache.hadoop.hive.metastore.events.CommitTxnEvent;
import org.apache.hadoop.hive.metastore.events.AlterDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.AlterPartitionEvent;
import org.apache.hadoop.hive.metastore.events.AlterTableEvent;
import org.apache.hadoop.hive.metastore.events.CreateDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.CreateTableEvent;
import org.apache.hadoop.hive.metastore.events.DropDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.DropPartitionEvent;
import org.apache.hadoop.hive.metastore.events.DropTableEvent;
import org.apache.hadoop.hive.metastore.events.InsertEvent;
import org.apache.hadoop.hive.metastore.events.ListenerEvent;
import org.apache.hadoop.hive.metastore.events.OpenTxnEvent;
import org.apache.hadoop.hive.metastore.events.ReloadEvent;
import org.apache.hadoop.hive.metastore.messaging.EventMessage;
import org.apache.hadoop.hive.metastore.messaging.MessageBuilder;
import org.apache.hadoop.hive.metastore.messaging.MessageEncoder;
import org.apache.hadoop.hive.metastore.messaging.MessageFactory;
import org.apache.hadoop.hive.metastore.tools.SQLGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The notification log writer for Hive 4.0.x, because Apache Hive did not publish
 * {@code hive-hcatalog-server-extensions} (which holds
 * {@code org.apache.hive.hcatalog.listener.DbNotificationListener}) to Maven Central for 4.0.x,
 * and the 4.2 build that is published needs Java 21.
 *
 * <p>It is deliberately thin: every message is built by Hive's own {@link MessageBuilder},
 * encoded by the metastore's configured encoder ({@code hive.metastore.event.message.factory}),
 * and stored by the metastore's own {@link RawStore#addNotificationEvent}, which allocates the
 * event id under the notification sequence lock inside the metastore transaction (this listener is
 * configured as a transactional listener). Header fields follow Hive's listener: ALTER_TABLE
 * carries the new names, ALTER_PARTITION the before partition's, ALTER_DATABASE the old name.
 * Retention is the metastore's {@link RawStore#cleanNotificationEvents} run every
 * {@code hive.metastore.event.db.listener.clean.interval} with
 * {@code hive.metastore.event.db.listener.timetolive}.
 *
 * <p>Transaction events (OPEN_TXN, COMMIT_TXN, ABORT_TXN, ALLOC_WRITE_ID_EVENT,
 * COMMIT_COMPACTION_EVENT) come from the metastore's TxnHandler inside its own JDBC transaction, so
 * they are written as Hive's DbNotificationListener writes them: with that connection, the event id
 * from NOTIFICATION_SEQUENCE (locked) and the row id from SEQUENCE_TABLE, and Hive's headers: no
 * database, table or catalog on OPEN_TXN, COMMIT_TXN and ABORT_TXN; the database and table, no
 * catalog, on ALLOC_WRITE_ID_EVENT and COMMIT_COMPACTION_EVENT.
 *
 * <p>What it leaves out, none of which hmssync reads: the data file lists of managed tables
 * (external tables have none in Hive's listener either) and file checksums of inserts; events
 * other than the database, table, partition, insert, reload and transaction kinds.
 */
public class NotificationLogListener extends TransactionalMetaStoreEventListener {
  private static final Logger LOG = LoggerFactory.getLogger(NotificationLogListener.class);
  private static Thread cleaner;

  private final MessageEncoder encoder;

  public NotificationLogListener(Configuration conf) throws MetaException {
    super(conf);
    encoder = MessageFactory.getDefaultInstance(conf);
    startCleaner(conf);
  }

  @Override
  public void onCreateDatabase(CreateDatabaseEvent e) throws MetaException {
    Database db = e.getDatabase();
    log(e, "CREATE_DATABASE", MessageBuilder.getInstance().buildCreateDatabaseMessage(db),
        db.getCatalogName(), db.getName(), null);
  }

  @Override
  public void onDropDatabase(DropDatabaseEvent e) throws MetaException {
    Database db = e.getDatabase();
    log(e, "DROP_DATABASE", MessageBuilder.getInstance().buildDropDatabaseMessage(db),
        db.getCatalogName(), db.getName(), null);
  }

  @Override
  public void onAlterDatabase(AlterDatabaseEvent e) throws MetaException {
    Database before = e.getOldDatabase();
    log(e, "ALTER_DATABASE", MessageBuilder.getInstance().buildAlterDatabaseMessage(before, e.getNewDatabase()),
        before.getCatalogName(), before.getName(), null);
  }

  @Override
  public void onCreateTable(CreateTableEvent e) throws MetaException {
    Table t = e.getTable();
    log(e, "CREATE_TABLE", MessageBuilder.getInstance().buildCreateTableMessage(t, null),
        t.getCatName(), t.getDbName(), t.getTableName());
  }

  @Override
  public void onDropTable(DropTableEvent e) throws MetaException {
    Table t = e.getTable();
    log(e, "DROP_TABLE", MessageBuilder.getInstance().buildDropTableMessage(t),
        t.getCatName(), t.getDbName(), t.getTableName());
  }

  @Override
  public void onAlterTable(AlterTableEvent e) throws MetaException {
    Table after = e.getNewTable();
    EventMessage m = MessageBuilder.getInstance()
        .buildAlterTableMessage(e.getOldTable(), after, e.getIsTruncateOp(), e.getWriteId());
    log(e, "ALTER_TABLE", m, after.getCatName(), after.getDbName(), after.getTableName());
  }

  @Override
  public void onAddPartition(AddPartitionEvent e) throws MetaException {
    Table t = e.getTable();
    log(e, "ADD_PARTITION", MessageBuilder.getInstance().buildAddPartitionMessage(t, e.getPartitionIterator(), null),
        t.getCatName(), t.getDbName(), t.getTableName());
  }

  @Override
  public void onDropPartition(DropPartitionEvent e) throws MetaException {
    Table t = e.getTable();
    log(e, "DROP_PARTITION", MessageBuilder.getInstance().buildDropPartitionMessage(t, e.getPartitionIterator()),
        t.getCatName(), t.getDbName(), t.getTableName());
  }

  @Override
  public void onAlterPartition(AlterPartitionEvent e) throws MetaException {
    Partition before = e.getOldPartition();
    EventMessage m = MessageBuilder.getInstance().buildAlterPartitionMessage(
        e.getTable(), before, e.getNewPartition(), e.getIsTruncateOp(), e.getWriteId());
    log(e, "ALTER_PARTITION", m, before.getCatName(), before.getDbName(), before.getTableName());
  }

  @Override
  public void onInsert(InsertEvent e) throws MetaException {
    Table t = e.getTableObj();
    Iterator<String> files = e.getFiles().iterator();
    log(e, "INSERT", MessageBuilder.getInstance().buildInsertMessage(t, e.getPartitionObj(), e.isReplace(), files),
        t.getCatName(), t.getDbName(), t.getTableName());
  }

  @Override
  public void onReload(ReloadEvent e) throws MetaException {
    Table t = e.getTableObj();
    log(e, "RELOAD", MessageBuilder.getInstance().buildReloadMessage(t, e.getPartitionObj(), e.isRefreshEvent()),
        t.getCatName(), t.getDbName(), t.getTableName());
  }

  @Override
  public void onOpenTxn(OpenTxnEvent e, Connection dbConn, SQLGenerator sql) throws MetaException {
    List<Long> ids = e.getTxnIds();
    logDirect(e, "OPEN_TXN", MessageBuilder.getInstance().buildOpenTxnMessage(ids.get(0), ids.get(ids.size() - 1)),
        null, null, dbConn, sql);
  }

  @Override
  public void onCommitTxn(CommitTxnEvent e, Connection dbConn, SQLGenerator sql) throws MetaException {
    logDirect(e, "COMMIT_TXN", MessageBuilder.getInstance().buildCommitTxnMessage(e.getTxnId()), null, null, dbConn, sql);
  }

  @Override
  public void onAbortTxn(AbortTxnEvent e, Connection dbConn, SQLGenerator sql) throws MetaException {
    logDirect(e, "ABORT_TXN", MessageBuilder.getInstance().buildAbortTxnMessage(e.getTxnId(), e.getDbsUpdated()),
        null, null, dbConn, sql);
  }

  @Override
  public void onAllocWriteId(AllocWriteIdEvent e, Connection dbConn, SQLGenerator sql) throws MetaException {
    logDirect(e, "ALLOC_WRITE_ID_EVENT",
        MessageBuilder.getInstance().buildAllocWriteIdMessage(e.getTxnToWriteIdList(), e.getDbName(), e.getTableName()),
        e.getDbName(), e.getTableName(), dbConn, sql);
  }

  @Override
  public void onCommitCompaction(CommitCompactionEvent e, Connection dbConn, SQLGenerator sql) throws MetaException {
    logDirect(e, "COMMIT_COMPACTION_EVENT", MessageBuilder.getInstance().buildCommitCompactionMessage(e),
        e.getDbname(), e.getTableName(), dbConn, sql);
  }

  @Override
  public boolean doesAddEventsToNotificationLogTable() {
    return true;
  }

  /**
   * Writes one NOTIFICATION_LOG row with the TxnHandler's connection (inside its transaction): the
   * event id from NOTIFICATION_SEQUENCE, locked for the rest of that transaction as Hive's listener
   * locks it on Derby, and NL_ID from DataNucleus's SEQUENCE_TABLE row for MNotificationLog.
   */
  private void logDirect(ListenerEvent source, String type, EventMessage msg, String db, String table,
      Connection c, SQLGenerator sql) throws MetaException {
    if (c == null || sql == null) {
      log(source, type, msg, null, db, table);
      return;
    }
    try {
      try (Statement st = c.createStatement()) {
        st.execute(sql.lockTable("NOTIFICATION_SEQUENCE", false));
      }
      long eventId = nextValue(c, sql, "select \"NEXT_EVENT_ID\" from \"NOTIFICATION_SEQUENCE\"",
          "update \"NOTIFICATION_SEQUENCE\" set \"NEXT_EVENT_ID\" = ?", null);
      long nlId = nextValue(c, sql, "select \"NEXT_VAL\" from \"SEQUENCE_TABLE\" where \"SEQUENCE_NAME\" = ?",
          "update \"SEQUENCE_TABLE\" set \"NEXT_VAL\" = ? where \"SEQUENCE_NAME\" = ?",
          "org.apache.hadoop.hive.metastore.model.MNotificationLog");
      try (PreparedStatement ps = c.prepareStatement("insert into \"NOTIFICATION_LOG\" (\"NL_ID\", \"EVENT_ID\", "
          + "\"EVENT_TIME\", \"EVENT_TYPE\", \"MESSAGE\", \"MESSAGE_FORMAT\", \"DB_NAME\", \"TBL_NAME\", \"CAT_NAME\") "
          + "values (?,?,?,?,?,?,?,?,?)")) {
        ps.setLong(1, nlId);
        ps.setLong(2, eventId);
        ps.setLong(3, System.currentTimeMillis() / 1000);
        ps.setString(4, type);
        ps.setString(5, encoder.getSerializer().serialize(msg));
        ps.setString(6, encoder.getMessageFormat());
        ps.setString(7, db);
        ps.setString(8, table);
        ps.setString(9, null);
        ps.executeUpdate();
      }
      source.putParameter(MetaStoreEventListenerConstants.DB_NOTIFICATION_EVENT_ID_KEY_NAME, Long.toString(eventId));
    } catch (SQLException ex) {
      throw new MetaException("writing " + type + " to NOTIFICATION_LOG failed: " + ex);
    }
  }

  /** Reads a sequence's next value for update and advances it by one; returns the value read. */
  private static long nextValue(Connection c, SQLGenerator sql, String select, String update, String name)
      throws SQLException, MetaException {
    long v;
    try (PreparedStatement ps = c.prepareStatement(sql.addForUpdateClause(select))) {
      if (name != null) {
        ps.setString(1, name);
      }
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new MetaException("sequence row missing (" + select + (name == null ? "" : ", " + name)
              + "): the metastore schema was not created by Hive's schema script");
        }
        v = rs.getLong(1);
      }
    }
    try (PreparedStatement ps = c.prepareStatement(update)) {
      ps.setLong(1, v + 1);
      if (name != null) {
        ps.setString(2, name);
      }
      ps.executeUpdate();
    }
    return v;
  }

  private void log(ListenerEvent source, String type, EventMessage msg, String cat, String db, String table)
      throws MetaException {
    NotificationEvent ev = new NotificationEvent(0, (int) (System.currentTimeMillis() / 1000), type,
        encoder.getSerializer().serialize(msg));
    ev.setMessageFormat(encoder.getMessageFormat());
    ev.setCatName(cat == null ? Warehouse.DEFAULT_CATALOG_NAME : cat);
    ev.setDbName(db);
    if (table != null) {
      ev.setTableName(table);
    }
    HMSHandler.getMSForConf(getConf()).addNotificationEvent(ev);
    if (ev.isSetEventId()) {
      source.putParameter(MetaStoreEventListenerConstants.DB_NOTIFICATION_EVENT_ID_KEY_NAME,
          Long.toString(ev.getEventId()));
    }
  }

  private static synchronized void startCleaner(Configuration conf) {
    if (cleaner != null) {
      return;
    }
    long ttlSeconds = MetastoreConf.getTimeVar(conf, ConfVars.EVENT_DB_LISTENER_TTL, TimeUnit.SECONDS);
    long intervalMillis = MetastoreConf.getTimeVar(conf, ConfVars.EVENT_DB_LISTENER_CLEAN_INTERVAL, TimeUnit.MILLISECONDS);
    Configuration own = new Configuration(conf);
    cleaner = new Thread(() -> {
      while (!Thread.currentThread().isInterrupted()) {
        try {
          Thread.sleep(intervalMillis);
          // getMSForConf is per thread: this thread has a RawStore of its own.
          HMSHandler.getMSForConf(own).cleanNotificationEvents((int) ttlSeconds);
        } catch (InterruptedException ie) {
          return;
        } catch (Exception ex) {
          LOG.warn("notification log cleaning failed; retrying in {} ms", intervalMillis, ex);
        }
      }
    }, "realhms-notification-cleaner");
    cleaner.setDaemon(true);
    cleaner.start();
    LOG.info("notification log cleaner: ttl {} s, every {} ms", ttlSeconds, intervalMillis);
  }
}
