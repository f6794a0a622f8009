package hmssync.realhms;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.NotificationEventRequest;
import org.apache.hadoop.hive.metastore.api.NotificationEventResponse;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;

/**
 * Reads the notification log with the real Hive client and prints it as NotificationEvent JSON
 * lines (the form {@code hmssync events decode} reads), so the suite can feed the decoder the
 * metastore's own messages independently of hmssync's Thrift client. Also prints the oldest and
 * current ids with {@code --ids}, which the cleanup test watches.
 */
public final class EventDump {
  /**
   * The oldest retained event. The Hive client's plain getNextNotification refuses a batch that
   * does not start at lastEvent+1, which is exactly the cleaned case; Hive 4's client has a
   * variant that allows gaps (called reflectively so this compiles against Hive 3.1 too). Hive
   * 3.1's client has none, so there the call goes over a Thrift connection of its own
   * (get_next_notification, as hmssync calls it), without the client's check.
   */
  private static List<NotificationEvent> oldest(MetaClient c, String uri) throws Exception {
    NotificationEventRequest rq = new NotificationEventRequest(0);
    rq.setMaxEvents(1);
    try {
      java.lang.reflect.Method m = c.getClass().getMethod("getNextNotification",
          NotificationEventRequest.class, boolean.class, IMetaStoreClient.NotificationFilter.class);
      return ((NotificationEventResponse) m.invoke(c, rq, true, null)).getEvents();
    } catch (NoSuchMethodException e) {
      java.net.URI u = java.net.URI.create(uri);
      org.apache.thrift.transport.TSocket sock = new org.apache.thrift.transport.TSocket(u.getHost(), u.getPort());
      sock.setTimeout(60_000);
      try {
        sock.open();
        ThriftHiveMetastore.Client raw = new ThriftHiveMetastore.Client(new org.apache.thrift.protocol.TBinaryProtocol(sock));
        return raw.get_next_notification(rq).getEvents();
      } finally {
        sock.close();
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Args a = new Args(args);
    String uri = a.value("uri", null);
    long from = a.intValue("from", 0);
    boolean idsOnly = Boolean.parseBoolean(a.value("ids", "false"));
    a.rejectUnknown();

    ObjectMapper json = new ObjectMapper();
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    try (MetaClient c = Workload.connect(uri)) {
      long current = c.getCurrentNotificationEventId().getEventId();
      if (idsOnly) {
        List<NotificationEvent> first = oldest(c, uri);
        long oldest = first == null || first.isEmpty() ? 0 : first.get(0).getEventId();
        out.println("oldest=" + oldest + " current=" + current);
        return;
      }
      long after = from;
      while (after < current) {
        List<NotificationEvent> evs = c.getNextNotification(after, 500, null).getEvents();
        if (evs == null || evs.isEmpty()) {
          break;
        }
        for (NotificationEvent e : evs) {
          Map<String, Object> m = new LinkedHashMap<>();
          m.put("eventId", e.getEventId());
          m.put("eventTime", e.getEventTime());
          m.put("eventType", e.getEventType());
          if (e.isSetDbName()) {
            m.put("dbName", e.getDbName());
          }
          if (e.isSetTableName()) {
            m.put("tableName", e.getTableName());
          }
          m.put("message", e.getMessage());
          if (e.isSetMessageFormat()) {
            m.put("messageFormat", e.getMessageFormat());
          }
          if (Compat.catName(e) != null) {
            m.put("catName", Compat.catName(e));
          }
          out.println(json.writeValueAsString(m));
          after = e.getEventId();
        }
      }
    }
  }
}
