package hmssync.realhms;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;

/**
 * Probes for the sidecar checks of run-e2e.sh (sidecar-checks.sh), over HTTP:
 * <ul>
 * <li>{@code converge --hms URI --fe URL,URL --timeout S}: waits until every fake FE's cache
 *     ({@code GET URL/dev/snapshot?catalog=hive}) equals the metastore's state read with the Hive
 *     client; exit 1 with the differences otherwise;</li>
 * <li>{@code master --http URL,URL}: prints the index of the member whose {@code /master} answers
 *     200 (exactly one must);</li>
 * <li>{@code full-refreshes --http URL,URL}: prints the sum of
 *     {@code hmssync_full_refreshes_total} over the members' {@code /metrics}.</li>
 * </ul>
 */
public final class SidecarProbe {
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      throw new IllegalArgumentException("usage: SidecarProbe converge|master|full-refreshes --name value...");
    }
    Args a = new Args(java.util.Arrays.copyOfRange(args, 1, args.length));
    switch (args[0]) {
      case "converge" -> converge(a);
      case "master" -> master(a);
      case "full-refreshes" -> fullRefreshes(a);
      default -> throw new IllegalArgumentException("unknown probe " + args[0]);
    }
  }

  private static void converge(Args a) throws Exception {
    String hms = a.value("hms", null);
    List<String> fes = List.of(a.value("fe", null).split(","));
    String catalog = a.value("catalog", "hive");
    int timeout = a.intValue("timeout", 120);
    a.rejectUnknown();
    long deadline = System.nanoTime() + Duration.ofSeconds(timeout).toNanos();
    String last = "";
    while (true) {
      JsonNode truth;
      try (HiveMetaStoreClient c = Workload.connect(hms)) {
        Map<String, Map<String, List<String>>> s = Workload.Snapshot.take(c);
        truth = JSON.valueToTree(s);
      }
      StringBuilder diff = new StringBuilder();
      for (String fe : fes) {
        String body;
        try {
          body = get(fe + "/dev/snapshot?catalog=" + catalog, 200);
        } catch (Exception e) {
          diff.append("  ").append(fe).append(": ").append(Workload.oneLine(e)).append('\n');
          continue;
        }
        JsonNode got = JSON.readTree(body);
        if (!got.equals(truth)) {
          diff.append("  ").append(fe).append(":\n    want ").append(truth).append("\n    got  ").append(got).append('\n');
        }
      }
      if (diff.length() == 0) {
        System.out.println("CONVERGED " + fes.size() + " FEs on " + truth);
        return;
      }
      last = diff.toString();
      if (System.nanoTime() > deadline) {
        System.out.println("NOT CONVERGED after " + timeout + "s:\n" + last);
        System.exit(1);
      }
      Thread.sleep(500);
    }
  }

  private static void master(Args a) throws Exception {
    List<String> members = List.of(a.value("http", null).split(","));
    a.rejectUnknown();
    int found = -1;
    for (int i = 0; i < members.size(); i++) {
      try {
        get(members.get(i) + "/master", 200);
      } catch (Exception e) {
        continue;
      }
      if (found >= 0) {
        System.out.println("TWO MASTERS " + members.get(found) + " " + members.get(i));
        System.exit(1);
      }
      found = i;
    }
    if (found < 0) {
      System.out.println("NO MASTER among " + members);
      System.exit(1);
    }
    System.out.println(found);
  }

  private static void fullRefreshes(Args a) throws Exception {
    List<String> members = List.of(a.value("http", null).split(","));
    a.rejectUnknown();
    double sum = 0;
    for (String m : members) {
      for (String line : get(m + "/metrics", 200).split("\n")) {
        if (line.startsWith("hmssync_full_refreshes_total")) {
          sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        }
      }
    }
    System.out.println((long) sum);
  }

  private static String get(String url, int want) throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != want) {
      throw new IllegalStateException("GET " + url + ": status " + r.statusCode());
    }
    return r.body();
  }
}
