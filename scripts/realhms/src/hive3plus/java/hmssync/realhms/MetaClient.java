package hmssync.realhms;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.MetaException;

/**
 * The real Hive client, as the suite's programs use it (Hive 3.x/4.x: the client as it is;
 * src/hive2/java adapts Hive 2's).
 */
class MetaClient extends HiveMetaStoreClient {
  MetaClient(Configuration conf) throws MetaException {
    super(conf);
  }
}
