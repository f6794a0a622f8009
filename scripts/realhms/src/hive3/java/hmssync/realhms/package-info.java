/**
 * Hive 3.1 needs no code of its own: Hive's DbNotificationListener is on Maven Central for 3.1.x
 * (hive-hcatalog-server-extensions) and the launcher configures it.
 */
package hmssync.realhms;
