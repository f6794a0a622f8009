package hmssync.realhms;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * What a fake FE ({@code hmssync dev fe}, native dialect) received for one table, for
 * txn-checks.sh: {@code TxnProbe refreshes --fe URL --db D --table T --after N [--await E]
 * [--timeout S]} lists, from the FE's received batches, the REFRESH_TABLE / REFRESH_PARTITIONS
 * descriptors of D.T with event ids above N ({@code refresh:EVENT_ID}) and the batches above N that
 * were full refreshes ({@code full:FROM-TO}), on one line {@code REFRESHES n=K [items]}. With
 * --await E it waits (up to --timeout seconds, default 60) until a refresh of D.T with event id E
 * arrived, and exits 1 if none did.
 */
public final class TxnProbe {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  public static void main(String[] args) throws Exception {
    if (args.length == 0 || !args[0].equals("refreshes")) {
      throw new IllegalArgumentException("want: TxnProbe refreshes --fe URL --db D --table T --after N [--await E] [--timeout S]");
    }
    Args a = new Args(java.util.Arrays.copyOfRange(args, 1, args.length));
    String fe = a.value("fe", null);
    String db = a.value("db", null);
    String table = a.value("table", null);
    long after = Long.parseLong(a.value("after", null));
    String await = a.value("await", "");
    int timeout = a.intValue("timeout", 60);
    a.rejectUnknown();
    long deadline = System.nanoTime() + Duration.ofSeconds(timeout).toNanos();
    while (true) {
      List<String> items = new ArrayList<>();
      HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(fe + "/_fetest/state"))
          .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        throw new IllegalStateException("GET " + fe + "/_fetest/state: status " + r.statusCode());
      }
      boolean found = false;
      for (JsonNode b : JSON.readTree(r.body()).path("changes")) {
        if (b.path("full_refresh").asBoolean() && b.path("to_event_id").asLong() > after) {
          items.add("full:" + b.path("from_event_id").asLong() + "-" + b.path("to_event_id").asLong());
        }
        for (JsonNode d : b.path("changes")) {
          String op = d.path("op").asText();
          long id = d.path("event_id").asLong();
          if (id > after && db.equals(d.path("db").asText()) && table.equals(d.path("table").asText())
              && (op.equals("REFRESH_TABLE") || op.equals("REFRESH_PARTITIONS"))) {
            items.add("refresh:" + id);
            found |= !await.isEmpty() && id == Long.parseLong(await);
          }
        }
      }
      String line = "REFRESHES n=" + items.size() + " " + items;
      if (await.isEmpty() || found) {
        System.out.println(line);
        return;
      }
      if (System.nanoTime() > deadline) {
        System.out.println("NO REFRESH of " + db + "." + table + " at event " + await + " after " + timeout + "s: " + line);
        System.exit(1);
      }
      Thread.sleep(250);
    }
  }
}
