package hmssync.realhms;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;

/**
 * Starts a real Apache Hive Metastore on 127.0.0.1 with embedded Derby in a directory of its
 * own, configured as the hmssync reference (hms.md §1) requires: notification API open to
 * non-proxy users, a transactional notification listener, DML events on.
 *
 * <p>Prints one line {@code REALHMS READY uri=thrift://127.0.0.1:PORT ...} once the metastore
 * answers a notification call, so scripts can wait on it, and {@code REALHMS STOPPED} after a
 * clean stop (SIGTERM). The directory may be reused: a second start on the same directory keeps
 * the metastore database and its notification log (the "metastore restart" case).
 */
public final class Launcher {

  /** Message encoders by the short name the scripts use. */
  static final Map<String, String> ENCODERS = Map.of(
      "json", "org.apache.hadoop.hive.metastore.messaging.json.JSONMessageEncoder",
      "gzip", "org.apache.hadoop.hive.metastore.messaging.json.gzip.GzipJSONMessageEncoder");

  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("--print-free-port")) {
      // For the scripts: a port free on 127.0.0.1 now (the caller binds it soon after).
      System.out.println(freePort());
      return;
    }
    Args a = new Args(args);
    int port = a.intValue("port", 0);
    Path dir = Path.of(a.value("dir", null));
    String format = a.value("format", "json");
    long ttl = a.intValue("ttl-seconds", 86400);
    String cleanIntervalArg = a.value("clean-interval-seconds", "");
    String listener = a.value("listener", BuildProfile.get("listener"));
    int readyTimeout = a.intValue("ready-timeout-seconds", 180);
    // --schema-script: Hive's own schema script for Derby (schematool's, from the metastore's bin
    // tarball), run into a fresh database before the metastore starts. DataNucleus creates only the
    // tables of its model classes; the transaction tables (TXNS, TXN_TO_WRITE_ID, NEXT_WRITE_ID, ...)
    // that open_txns and allocate_table_write_ids need come only from that script.
    String schemaScript = a.value("schema-script", "");
    // --settings "name=value;name=value": hive-site settings applied over the launcher's own, for
    // a metastore set up wrongly on purpose (the suite's check of hmssync check's findings).
    Map<String, String> overrides = parseSettings(a.value("settings", ""));
    a.rejectUnknown();

    String factory = messageFactory(format);
    if (listener == null || listener.isEmpty()) {
      throw new IllegalArgumentException("--listener (or -Drealhms.listener) names the notification listener class");
    }
    long cleanInterval = cleanIntervalSeconds(listener, cleanIntervalArg);
    if (port == 0) {
      port = freePort();
    }
    Files.createDirectories(dir);
    File warehouse = dir.resolve("warehouse").toFile();
    warehouse.mkdirs();
    String derbyUrl = "jdbc:derby:" + dir.resolve("metastore_db").toAbsolutePath() + ";create=true";
    boolean fresh = !Files.exists(dir.resolve("metastore_db"));
    if (!schemaScript.isEmpty() && fresh) {
      System.setProperty("derby.system.home", dir.toAbsolutePath().toString());
      System.setProperty("derby.stream.error.file", dir.resolve("derby.log").toAbsolutePath().toString());
      int n = runSchemaScript(derbyUrl, Path.of(schemaScript));
      System.out.println("REALHMS SCHEMA " + schemaScript + " statements=" + n);
    }

    Configuration conf = Compat.newConf();
    Map<String, String> settings = new LinkedHashMap<>();
    // Storage: embedded Derby, schema created by DataNucleus on first start. The schema scripts
    // that schematool runs are not published to Maven Central, only in the binary tarball.
    settings.put("javax.jdo.option.ConnectionURL", derbyUrl);
    settings.put("javax.jdo.option.ConnectionDriverName", "org.apache.derby.jdbc.EmbeddedDriver");
    settings.put("datanucleus.schema.autoCreateAll", "true");
    // Create every table when the persistence layer starts, not at first use inside some
    // request's transaction (Derby DDL there holds table locks until commit), and so that
    // NOTIFICATION_SEQUENCE exists for seedNotificationSequence below.
    settings.put("datanucleus.autoStartMechanism", "Classes");
    settings.put("datanucleus.autoStartClassNames", String.join(",", ModelClasses.list()));
    settings.put("hive.metastore.schema.verification", "false");
    settings.put("hive.metastore.warehouse.dir", warehouse.toURI().toString());
    settings.put("hive.metastore.warehouse.external.dir", warehouse.toURI().toString());
    settings.put("hive.metastore.uris", "");
    settings.put("metastore.thrift.bind.host", "127.0.0.1");
    settings.put("hive.metastore.thrift.bind.host", "127.0.0.1");
    // hms.md §1: what a notification-log consumer needs from the metastore.
    settings.put("hive.metastore.event.db.notification.api.auth", "false");
    settings.put("hive.metastore.transactional.event.listeners", listener);
    settings.put("hive.metastore.dml.events", "true");
    settings.put("hive.metastore.event.message.factory", factory);
    // Retention, short for the cleanup test.
    settings.put("hive.metastore.event.db.listener.timetolive", ttl + "s");
    if (Compat.hasCleanIntervalSetting()) {
      settings.put("hive.metastore.event.db.listener.clean.interval", cleanInterval + "s");
      settings.put("hive.metastore.event.db.listener.clean.startup.wait.interval", "0s");
    }
    // Partition filter expressions are compiled by hive-exec, which a standalone metastore lacks
    // (Hive 3.1 defaults to that class); hmssync never filters partitions by expression.
    settings.put("hive.metastore.expression.proxy", "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy");
    if (!schemaScript.isEmpty()) {
      // Hive 4's metadata transformer rewrites or refuses a managed insert-only table created by a
      // client that declares no capabilities (the plain client here); Hive 3.1 has none. Off: the
      // table is stored as created, as Hive's own query engine would create it.
      settings.put("metastore.metadata.transformer.class", " ");
    }
    // Background tasks (with the schema script, the transaction tables exist; the housekeeping that
    // times out open transactions and the compactor stay off so that a transaction stays open
    // exactly as long as a check holds it).
    settings.put("hive.metastore.housekeeping.threads.on", "false");
    settings.put("hive.compactor.initiator.on", "false");
    settings.put("metastore.task.threads.always", "org.apache.hadoop.hive.metastore.events.EventCleanerTask");
    settings.putAll(overrides);
    for (Map.Entry<String, String> e : settings.entrySet()) {
      conf.set(e.getKey(), e.getValue());
    }
    // hive.metastore.sasl.enabled with the metastore's principal and keytab (Kerberos.java).
    Kerberos.server(conf);
    System.setProperty("derby.system.home", dir.toAbsolutePath().toString());
    System.setProperty("derby.stream.error.file", dir.resolve("derby.log").toAbsolutePath().toString());

    Runtime.getRuntime().addShutdownHook(new Thread(Launcher::stopDerby, "realhms-stop"));

    final int p = port;
    Thread server = new Thread(() -> {
      try {
        Compat.startMetaStore(p, conf);
      } catch (Throwable t) {
        System.out.println("REALHMS FAILED " + t);
        t.printStackTrace();
        System.exit(1);
      }
    }, "realhms-metastore");
    server.setDaemon(false);
    server.start();

    // With Kerberos the URI carries the host name of the metastore's principal (hive/localhost):
    // clients replace _HOST with it.
    String uri = "thrift://" + (Kerberos.on() ? "localhost" : "127.0.0.1") + ":" + port;
    awaitReady(uri, readyTimeout);
    seedNotificationSequence(derbyUrl);
    long current = awaitReady(uri, readyTimeout);
    System.out.println("REALHMS READY uri=" + uri + " hive=" + Compat.version()
        + " format=" + format + " listener=" + listener + " current_event_id=" + current
        + " ttl_seconds=" + ttl + " clean_interval_seconds=" + cleanInterval
        + " kerberos=" + (Kerberos.on() ? Kerberos.principal() : "off") + " overrides=" + overrides.size());
    System.out.flush();
    server.join();
  }

  /** Parses --settings: name=value pairs separated by ';' (a value may be empty). */
  static Map<String, String> parseSettings(String spec) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String pair : spec.split(";")) {
      if (pair.isBlank()) {
        continue;
      }
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("--settings " + spec + ": want name=value pairs separated by ';'");
      }
      out.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
    }
    return out;
  }

  /**
   * The message factory setting for a format. Hive 4 configures an encoder; Hive 3.1 has no
   * encoders, only its JSON message factory (json-0.2), and so no gzip.
   */
  static String messageFactory(String format) {
    if (!ENCODERS.containsKey(format)) {
      throw new IllegalArgumentException("--format " + format + ": want one of " + ENCODERS.keySet());
    }
    try {
      Class.forName(ENCODERS.get("json"));
      return ENCODERS.get(format);
    } catch (ClassNotFoundException e) {
      if (format.equals("json")) {
        return "org.apache.hadoop.hive.metastore.messaging.json.JSONMessageFactory";
      }
      throw new IllegalArgumentException("--format " + format + ": Hive " + Compat.version()
          + " has no message encoders (they came with Hive 4), so it writes json-0.2 only");
    }
  }

  /**
   * The interval at which the listener cleans the notification log: the requested one where the
   * metastore has a setting for it (default 7200 s, Hive's default), else the listener's own.
   * Hive 3.1.3's DbNotificationListener reads no interval setting: its CleanerThread cleans once
   * at start and then every {@code sleepTime} ms, a private static constant (60000); that value is
   * read here (not changed) so that what is printed is what runs. Asking for another interval
   * there is refused rather than silently ignored.
   */
  static long cleanIntervalSeconds(String listener, String requested) {
    if (Compat.hasCleanIntervalSetting()) {
      return requested.isEmpty() ? 7200 : Long.parseLong(requested);
    }
    long fixed;
    try {
      java.lang.reflect.Field f = Class.forName(listener + "$CleanerThread").getDeclaredField("sleepTime");
      f.setAccessible(true);
      fixed = f.getLong(null) / 1000;
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalStateException("Hive " + Compat.version() + " has no cleaner-interval setting"
          + " and the cleaner interval of " + listener + " could not be read (" + e + ")", e);
    }
    if (!requested.isEmpty() && Long.parseLong(requested) != fixed) {
      throw new IllegalArgumentException("--clean-interval-seconds " + requested + ": Hive " + Compat.version()
          + " has no cleaner-interval setting; " + listener + " cleans every " + fixed + " s (a constant in the listener)");
    }
    return fixed;
  }

  /**
   * Runs Hive's Derby schema script (statements end with ';' at the end of a line; '--' lines are
   * comments) in one connection, and returns the number of statements.
   */
  static int runSchemaScript(String derbyUrl, Path script) throws IOException, SQLException {
    StringBuilder stmt = new StringBuilder();
    int n = 0;
    try (Connection c = DriverManager.getConnection(derbyUrl); Statement st = c.createStatement()) {
      for (String line : Files.readAllLines(script)) {
        String t = line.trim();
        if (t.isEmpty() || t.startsWith("--")) {
          continue;
        }
        stmt.append(line).append('\n');
        if (t.endsWith(";")) {
          String sql = stmt.toString().trim();
          sql = sql.substring(0, sql.length() - 1).trim();
          stmt.setLength(0);
          try {
            st.execute(sql);
          } catch (SQLException e) {
            throw new SQLException("schema script " + script + ", statement " + (n + 1) + " (" + sql.lines().findFirst().orElse("")
                + "): " + e.getMessage(), e.getSQLState(), e);
          }
          n++;
        }
      }
    }
    return n;
  }

  /** Polls the metastore until a notification call succeeds; the call the consumer makes first. */
  private static long awaitReady(String uri, int timeoutSeconds) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
    Exception last = null;
    while (System.nanoTime() < deadline) {
      try (MetaClient c = Workload.connect(uri)) {
        return c.getCurrentNotificationEventId().getEventId();
      } catch (Exception e) {
        last = e;
        Thread.sleep(250);
      }
    }
    throw new IllegalStateException("metastore at " + uri + " not ready after " + timeoutSeconds + "s", last);
  }

  /**
   * Gives NOTIFICATION_SEQUENCE its one row, as Hive's schema scripts do. Without it the first
   * notification inserts that row inside the writing transaction, which has locked the table, and
   * DataNucleus's id generator then waits on that lock from a second connection until Derby's lock
   * timeout (60 s): every first event of a fresh metastore would take a minute.
   */
  private static void seedNotificationSequence(String derbyUrl) throws SQLException {
    try (Connection c = DriverManager.getConnection(derbyUrl); Statement st = c.createStatement()) {
      st.executeUpdate("INSERT INTO \"NOTIFICATION_SEQUENCE\" (\"NNI_ID\", \"NEXT_EVENT_ID\") "
          + "SELECT 1, 1 FROM SYSIBM.SYSDUMMY1 WHERE NOT EXISTS (SELECT 1 FROM \"NOTIFICATION_SEQUENCE\")");
    } catch (SQLException e) {
      throw new SQLException("seeding NOTIFICATION_SEQUENCE in " + derbyUrl
          + " failed (does the metastore schema exist?): " + e.getMessage(), e.getSQLState(), e);
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** Shuts Derby down so the database is consistent on disk for the next start on the same directory. */
  private static void stopDerby() {
    try {
      DriverManager.getConnection("jdbc:derby:;shutdown=true");
    } catch (SQLException e) {
      // Derby reports a successful system shutdown as SQLState XJ015.
      if (!"XJ015".equals(e.getSQLState())) {
        System.out.println("REALHMS derby shutdown: " + e);
      }
    }
    System.out.println("REALHMS STOPPED");
    System.out.flush();
  }
}
