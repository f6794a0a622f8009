package hmssync.realhms;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

/**
 * Sets the faults of fake FEs ({@code hmssync dev fe}) through their test control API
 * ({@code /_fetest/faults}, docs/dev-servers.md), for the sidecar checks of run-e2e.sh:
 * {@code FEFaults --fe URL,URL [--clear true] [--add JSON]} first removes every fault of each FE
 * (with {@code --clear true}), then adds the fault (or array of faults) JSON to each. Doing both
 * in one call replaces one fault by another with only milliseconds in between. A refused request
 * exits 1 naming the FE and its answer.
 */
public final class FEFaults {
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();

  public static void main(String[] args) throws Exception {
    Args a = new Args(args);
    List<String> fes = List.of(a.value("fe", null).split(","));
    boolean clear = Boolean.parseBoolean(a.value("clear", "false"));
    String add = a.value("add", "");
    a.rejectUnknown();
    if (!clear && add.isEmpty()) {
      throw new IllegalArgumentException("FEFaults: nothing to do: give --clear true and/or --add JSON");
    }
    for (String fe : fes) {
      URI u = URI.create(fe + "/_fetest/faults");
      if (clear) {
        send(HttpRequest.newBuilder(u).DELETE(), fe, "DELETE");
      }
      if (!add.isEmpty()) {
        send(HttpRequest.newBuilder(u).header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(add)), fe, "POST " + add);
      }
    }
  }

  private static void send(HttpRequest.Builder b, String fe, String what) throws Exception {
    HttpResponse<String> r = HTTP.send(b.timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() / 100 != 2) {
      System.out.println("FE " + fe + " refused " + what + " /_fetest/faults: status " + r.statusCode() + ": " + r.body().strip());
      System.exit(1);
    }
  }
}
