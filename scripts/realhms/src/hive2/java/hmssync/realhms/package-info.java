/**
 * Hive 2.x: Hive's DbNotificationListener is on Maven Central for 2.3.x
 * (hive-hcatalog-server-extensions); Compat adapts the launcher and the clients to Hive 2's
 * metastore API (HiveConf, no catalogs).
 */
package hmssync.realhms;
