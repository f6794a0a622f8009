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

/**
 * Probes for the sidecar checks of run-e2e.sh (sidecar-checks.sh), over HTTP:
 * <ul>
 * <li>{@code converge --hms URI --fe URL,URL --timeout S [--database D [--table T]]}: waits until
 *     every fake FE's cache (the catalog's databases, tables and partitions in
 *     {@code GET URL/_fetest/state}) equals the metastore's state read with the Hive client (with
 *     {@code --database}, database D only: a sidecar whose catalog includes D alone leaves the
 *     others as its first refresh found them; with {@code --table}, table D.T only); exit 1 with
 *     the differences otherwise; {@code --timeout 0} looks once;</li>
 * <li>{@code master --http URL,URL}: prints the index of the member whose {@code /master} answers
 *     200 (exactly one must);</li>
 * <li>{@code full-refreshes --http URL,URL [--reason R]}: prints the sum of
 *     {@code hmssync_full_refreshes_total} over the members' {@code /metrics} (only the series
 *     with {@code reason="R"} when given); with {@code --each true}, one sum per member,
 *     space-separated;</li>
 * <li>{@code metric --http URL,URL --name N [--match S]}: prints the sum of metric {@code N} over
 *     the members' {@code /metrics} (only the series whose line contains {@code S} when given);
 *     with {@code --above A [--timeout S]} it first waits until that sum exceeds {@code A}, for
 *     evidence that something happened (exit 1 with the last sum if it does not within S
 *     seconds, default 60).</li>
 * <li>{@code cursors --http URL,URL [--catalog C] [--above A] [--below B] [--timeout S]}: prints
 *     each member's cursor for the catalog (its {@code /status}), space-separated; with a bound it
 *     first waits until every member's cursor c has A &lt; c &lt; B, for evidence of where the
 *     members are (exit 1 with the last cursors if not within S seconds, default 60; 0 looks
 *     once);</li>
 * <li>{@code failing --http URL,URL --error TEXT [--catalog C] [--timeout S]}: waits until some
 *     member's {@code /status} shows the catalog failing with a last error containing TEXT, and
 *     prints that member's index and error (exit 1 if none within S seconds, default 60).</li>
 * </ul>
 */
public final class SidecarProbe {
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      throw new IllegalArgumentException("usage: SidecarProbe converge|master|full-refreshes|metric|cursors|failing --name value...");
    }
    Args a = new Args(java.util.Arrays.copyOfRange(args, 1, args.length));
    switch (args[0]) {
      case "converge" -> converge(a);
      case "master" -> master(a);
      case "full-refreshes" -> fullRefreshes(a);
      case "metric" -> metric(a);
      case "cursors" -> cursors(a);
      case "failing" -> failing(a);
      default -> throw new IllegalArgumentException("unknown probe " + args[0]);
    }
  }

  private static void converge(Args a) throws Exception {
    String hms = a.value("hms", null);
    List<String> fes = List.of(a.value("fe", null).split(","));
    String catalog = a.value("catalog", "hive");
    int timeout = a.intValue("timeout", 120);
    String database = a.value("database", "");
    String table = a.value("table", "");
    a.rejectUnknown();
    if (!table.isEmpty() && database.isEmpty()) {
      throw new IllegalArgumentException("--table needs --database");
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(timeout).toNanos();
    String last = "";
    while (true) {
      JsonNode truth;
      try (MetaClient c = Workload.connect(hms)) {
        Map<String, Map<String, List<String>>> s = Workload.Snapshot.take(c);
        truth = JSON.valueToTree(s);
      }
      if (!database.isEmpty()) {
        truth = truth.path(database);
      }
      if (!table.isEmpty()) {
        truth = truth.path(table);
      }
      StringBuilder diff = new StringBuilder();
      for (String fe : fes) {
        JsonNode got;
        try {
          got = feCache(JSON.readTree(get(fe + "/_fetest/state", 200)), catalog);
          if (!database.isEmpty()) {
            got = got.path(database);
          }
          if (!table.isEmpty()) {
            got = got.path(table);
          }
        } catch (Exception e) {
          diff.append("  ").append(fe).append(": ").append(Workload.oneLine(e)).append('\n');
          continue;
        }
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

  /** The catalog's cache in a fake FE's state as {db: {table: [sorted partitions]}}. */
  private static JsonNode feCache(JsonNode state, String catalog) {
    Map<String, Map<String, List<String>>> out = new java.util.TreeMap<>();
    JsonNode dbs = state.path("catalogs").path(catalog).path("databases");
    for (var db = dbs.fields(); db.hasNext(); ) {
      var d = db.next();
      Map<String, List<String>> tables = new java.util.TreeMap<>();
      for (var t = d.getValue().path("tables").fields(); t.hasNext(); ) {
        var e = t.next();
        List<String> parts = new java.util.ArrayList<>();
        e.getValue().path("partitions").forEach(p -> parts.add(p.asText()));
        java.util.Collections.sort(parts);
        tables.put(e.getKey(), parts);
      }
      out.put(d.getKey(), tables);
    }
    return JSON.valueToTree(out);
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
    String reason = a.value("reason", "");
    boolean each = Boolean.parseBoolean(a.value("each", "false"));
    a.rejectUnknown();
    long[] sums = metricSums(members, "hmssync_full_refreshes_total", reason.isEmpty() ? "" : "reason=\"" + reason + "\"");
    StringBuilder out = new StringBuilder();
    for (long sum : sums) {
      out.append(out.length() == 0 ? "" : " ").append(sum);
    }
    System.out.println(each ? out.toString() : Long.toString(total(sums)));
  }

  private static void metric(Args a) throws Exception {
    List<String> members = List.of(a.value("http", null).split(","));
    String name = a.value("name", null);
    String match = a.value("match", "");
    String above = a.value("above", "");
    int timeout = a.intValue("timeout", 60);
    a.rejectUnknown();
    if (above.isEmpty()) {
      System.out.println(total(metricSums(members, name, match)));
      return;
    }
    long floor = Long.parseLong(above);
    long deadline = System.nanoTime() + Duration.ofSeconds(timeout).toNanos();
    while (true) {
      String last;
      try {
        long sum = total(metricSums(members, name, match));
        if (sum > floor) {
          System.out.println(sum);
          return;
        }
        last = name + " sums to " + sum;
      } catch (Exception e) {
        last = Workload.oneLine(e);
      }
      if (System.nanoTime() > deadline) {
        System.out.println("NOT ABOVE " + floor + " after " + timeout + "s: " + last);
        System.exit(1);
      }
      Thread.sleep(250);
    }
  }

  private static void cursors(Args a) throws Exception {
    List<String> members = List.of(a.value("http", null).split(","));
    String catalog = a.value("catalog", "hive");
    String above = a.value("above", "");
    String below = a.value("below", "");
    int timeout = a.intValue("timeout", 60);
    a.rejectUnknown();
    long lo = above.isEmpty() ? Long.MIN_VALUE : Long.parseLong(above);
    long hi = below.isEmpty() ? Long.MAX_VALUE : Long.parseLong(below);
    long deadline = System.nanoTime() + Duration.ofSeconds(timeout).toNanos();
    while (true) {
      String last;
      try {
        StringBuilder out = new StringBuilder();
        boolean within = true;
        for (String m : members) {
          long c = catalogStatus(m, catalog).path("cursor").asLong();
          within &= lo < c && c < hi;
          out.append(out.length() == 0 ? "" : " ").append(c);
        }
        if (within) {
          System.out.println(out);
          return;
        }
        last = "cursors " + out;
      } catch (Exception e) {
        last = Workload.oneLine(e);
      }
      if (System.nanoTime() > deadline) {
        System.out.println("NOT WITHIN (" + (above.isEmpty() ? "-inf" : above) + ", " + (below.isEmpty() ? "inf" : below)
            + ") after " + timeout + "s: " + last);
        System.exit(1);
      }
      Thread.sleep(250);
    }
  }

  private static void failing(Args a) throws Exception {
    List<String> members = List.of(a.value("http", null).split(","));
    String catalog = a.value("catalog", "hive");
    String text = a.value("error", null);
    int timeout = a.intValue("timeout", 60);
    a.rejectUnknown();
    long deadline = System.nanoTime() + Duration.ofSeconds(timeout).toNanos();
    while (true) {
      StringBuilder seen = new StringBuilder();
      for (int i = 0; i < members.size(); i++) {
        try {
          JsonNode c = catalogStatus(members.get(i), catalog);
          String err = c.path("last_error").asText();
          if (c.path("failing").asBoolean() && err.contains(text)) {
            System.out.println(i + " " + err);
            return;
          }
          seen.append("\n  ").append(members.get(i)).append(": failing=").append(c.path("failing").asBoolean())
              .append(" last_error=").append(err);
        } catch (Exception e) {
          seen.append("\n  ").append(members.get(i)).append(": ").append(Workload.oneLine(e));
        }
      }
      if (System.nanoTime() > deadline) {
        System.out.println("NO MEMBER FAILING WITH \"" + text + "\" after " + timeout + "s:" + seen);
        System.exit(1);
      }
      Thread.sleep(250);
    }
  }

  /** The catalog's entry in a member's /status. */
  private static JsonNode catalogStatus(String member, String catalog) throws Exception {
    for (JsonNode c : JSON.readTree(get(member + "/status", 200)).path("catalogs")) {
      if (catalog.equals(c.path("name").asText())) {
        return c;
      }
    }
    throw new IllegalStateException(member + "/status has no catalog " + catalog);
  }

  /** Per member, the sum of metric name's series whose line contains match ("" = every series). */
  private static long[] metricSums(List<String> members, String name, String match) throws Exception {
    long[] sums = new long[members.size()];
    for (int i = 0; i < members.size(); i++) {
      double sum = 0;
      for (String line : get(members.get(i) + "/metrics", 200).split("\n")) {
        // The name alone, not a longer one it begins (hmssync_x_total vs hmssync_x_total_y).
        boolean series = line.startsWith(name + "{") || line.startsWith(name + " ");
        if (series && (match.isEmpty() || line.contains(match))) {
          sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        }
      }
      sums[i] = (long) sum;
    }
    return sums;
  }

  private static long total(long[] sums) {
    long t = 0;
    for (long s : sums) {
      t += s;
    }
    return t;
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
