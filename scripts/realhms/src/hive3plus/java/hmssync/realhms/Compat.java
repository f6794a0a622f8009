package hmssync.realhms;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.hive.metastore.security.HadoopThriftAuthBridge;
import org.apache.hadoop.hive.metastore.utils.MetastoreVersionInfo;

/**
 * What differs between the Hive versions' metastore APIs, for Hive 3.x and 4.x (the standalone
 * metastore, MetastoreConf). src/hive2/java has the Hive 2.x one (hive-metastore, HiveConf).
 */
final class Compat {
  private Compat() {}

  /** The metastore's in-memory delegation-token store (Kerberos.java: no ZooKeeper, no DB store). */
  static final String MEMORY_TOKEN_STORE = "org.apache.hadoop.hive.metastore.security.MemoryTokenStore";

  /** A configuration with the metastore's defaults. */
  static Configuration newConf() {
    return MetastoreConf.newMetastoreConf();
  }

  /** Runs the metastore's Thrift server on port (returns when it stops). */
  static void startMetaStore(int port, Configuration conf) throws Throwable {
    HiveMetaStore.startMetaStore(port, HadoopThriftAuthBridge.getBridge(), conf);
  }

  /** The metastore's Hive version. */
  static String version() {
    return MetastoreVersionInfo.getVersion();
  }

  /**
   * Whether this metastore has the cleaner-interval setting (hive.metastore.event.db.listener.
   * clean.interval, MetastoreConf EVENT_DB_LISTENER_CLEAN_INTERVAL). Hive 3.1.3 has only the TTL.
   */
  static boolean hasCleanIntervalSetting() {
    for (MetastoreConf.ConfVars v : MetastoreConf.ConfVars.values()) {
      if (v.name().equals("EVENT_DB_LISTENER_CLEAN_INTERVAL")) {
        return true;
      }
    }
    return false;
  }

  /** The event's catalog, or null when it names none. */
  static String catName(NotificationEvent e) {
    return e.isSetCatName() ? e.getCatName() : null;
  }
}
