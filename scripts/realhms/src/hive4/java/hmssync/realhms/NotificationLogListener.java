package hmssync.realhms;

import java.util.Iterator;
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
import org.apache.hadoop.hive.metastore.events.AddPartitionEvent;
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
import org.apache.hadoop.hive.metastore.events.ReloadEvent;
import org.apache.hadoop.hive.metastore.messaging.EventMessage;
import org.apache.hadoop.hive.metastore.messaging.MessageBuilder;
import org.apache.hadoop.hive.metastore.messaging.MessageEncoder;
import org.apache.hadoop.hive.metastore.messaging.MessageFactory;
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
 * <p>What it leaves out, none of which hmssync reads: the data file lists of managed tables
 * (external tables have none in Hive's listener either) and file checksums of inserts; events
 * other than the database, table, partition, insert and reload kinds.
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
