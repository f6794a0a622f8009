package hmssync.realhms;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * Kerberos for the suite's Java processes, from system properties the scripts set (none set: no
 * Kerberos). {@code realhms.krb.principal} and {@code realhms.krb.keytab} are this process's
 * login; {@code realhms.krb.service} is the metastore's principal (hive/_HOST@REALM) for
 * clients; {@code realhms.krb.qop}, when set, is hadoop.rpc.protection (authentication, integrity
 * or privacy) on both sides; {@code java.security.krb5.conf} names the realm's krb5.conf.
 *
 * <p>The metastore (Launcher) logs in as its service principal and turns on SASL with
 * {@code hadoop.security.authentication=kerberos}; the Hive clients (Workload, EventDump,
 * SidecarProbe) log in as a client principal and connect with SASL.
 */
final class Kerberos {
  private Kerberos() {}

  static boolean on() {
    return !System.getProperty("realhms.krb.keytab", "").isEmpty();
  }

  static String principal() {
    return System.getProperty("realhms.krb.principal", "");
  }

  static String keytab() {
    return System.getProperty("realhms.krb.keytab", "");
  }

  /** Sets what a Hive client needs to connect with SASL and logs in from the keytab. */
  static void client(Configuration conf) throws IOException {
    if (!on()) {
      return;
    }
    conf.set("hive.metastore.sasl.enabled", "true");
    conf.set("metastore.sasl.enabled", "true");
    String service = System.getProperty("realhms.krb.service", "");
    conf.set("hive.metastore.kerberos.principal", service);
    conf.set("metastore.kerberos.principal", service);
    login(conf);
  }

  /** Sets the metastore's SASL settings (its principal and keytab) and logs in. */
  static void server(Configuration conf) throws IOException {
    if (!on()) {
      return;
    }
    for (String prefix : new String[] {"hive.metastore.", "metastore."}) {
      conf.set(prefix + "sasl.enabled", "true");
      conf.set(prefix + "kerberos.principal", principal());
      conf.set(prefix + "kerberos.keytab.file", keytab());
    }
    // Delegation tokens in memory: the suite runs no ZooKeeper and the DB store needs tables
    // DataNucleus creates only for it.
    conf.set("hive.cluster.delegation.token.store.class", Compat.MEMORY_TOKEN_STORE);
    conf.set("metastore.cluster.delegation.token.store.class", Compat.MEMORY_TOKEN_STORE);
    login(conf);
  }

  private static void login(Configuration conf) throws IOException {
    conf.set("hadoop.security.authentication", "kerberos");
    String qop = System.getProperty("realhms.krb.qop", "");
    if (!qop.isEmpty()) {
      conf.set("hadoop.rpc.protection", qop);
    }
    UserGroupInformation.setConfiguration(conf);
    UserGroupInformation.loginUserFromKeytab(principal(), keytab());
  }
}
