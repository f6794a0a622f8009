package hmssync.realhms;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.shims.ShimLoader;
import org.apache.hive.common.util.HiveVersionInfo;

/**
 * What differs between the Hive versions' metastore APIs, for Hive 2.x: no standalone metastore
 * (hive-metastore on HiveConf, the Thrift auth bridge from the shims), no catalogs, no
 * cleaner-interval setting. src/hive3plus/java has the Hive 3.x/4.x one.
 */
final class Compat {
  private Compat() {}

  /** The metastore's in-memory delegation-token store (Kerberos.java: no ZooKeeper, no DB store). */
  static final String MEMORY_TOKEN_STORE = "org.apache.hadoop.hive.thrift.MemoryTokenStore";

  /** A configuration with the metastore's defaults. */
  static Configuration newConf() {
    return new HiveConf(Compat.class);
  }

  /** Runs the metastore's Thrift server on port (returns when it stops). */
  static void startMetaStore(int port, Configuration conf) throws Throwable {
    HiveConf hc = conf instanceof HiveConf ? (HiveConf) conf : new HiveConf(conf, Compat.class);
    HiveMetaStore.startMetaStore(port, ShimLoader.getHadoopThriftAuthBridge(), hc);
  }

  /** The metastore's Hive version. */
  static String version() {
    return HiveVersionInfo.getVersion();
  }

  /** Hive 2.x has no cleaner-interval setting: DbNotificationListener's cleaner has a constant. */
  static boolean hasCleanIntervalSetting() {
    return HiveConf.getConfVars("hive.metastore.event.db.listener.clean.interval") != null;
  }

  /** Hive 2.x events have no catalog. */
  static String catName(NotificationEvent e) {
    return null;
  }
}
