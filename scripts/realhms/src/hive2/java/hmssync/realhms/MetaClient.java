package hmssync.realhms;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.MetaException;

/**
 * The real Hive client, as the suite's programs use it. Hive 2.x's client takes a HiveConf and is
 * not AutoCloseable (Hive 3's is): this adds both.
 */
class MetaClient extends HiveMetaStoreClient implements AutoCloseable {
  MetaClient(Configuration conf) throws MetaException {
    super(conf instanceof HiveConf ? (HiveConf) conf : new HiveConf(conf, MetaClient.class));
  }
}
