package hmssync.realhms;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Compares descriptor lines (what hmssync printed) with the workload's expected lines: the same
 * JSON objects (key order aside) in the same order, nothing missing, nothing extra. Lines outside
 * [--from, --to] event ids in the actual output are ignored (the log may hold events of other
 * runs). Exit status 0 only on an exact match; every difference is printed.
 */
public final class Compare {
  public static void main(String[] args) throws Exception {
    Args a = new Args(args);
    Path expectedFile = Path.of(a.value("expected", null));
    Path actualFile = Path.of(a.value("actual", null));
    String label = a.value("label", actualFile.toString());
    long from = Long.parseLong(a.value("from", "0"));
    long to = Long.parseLong(a.value("to", Long.toString(Long.MAX_VALUE)));
    a.rejectUnknown();

    ObjectMapper json = new ObjectMapper();
    List<JsonNode> want = read(json, expectedFile, 0, Long.MAX_VALUE);
    List<JsonNode> got = read(json, actualFile, from, to);
    int problems = 0;
    int n = Math.max(want.size(), got.size());
    for (int i = 0; i < n; i++) {
      JsonNode w = i < want.size() ? want.get(i) : null;
      JsonNode g = i < got.size() ? got.get(i) : null;
      if (w != null && w.equals(g)) {
        continue;
      }
      problems++;
      if (problems <= 40) {
        System.out.println("  line " + (i + 1) + ":\n    want " + w + "\n    got  " + g);
      }
    }
    if (problems == 0) {
      System.out.println("MATCH " + label + ": " + want.size() + " descriptors");
      return;
    }
    System.out.println("MISMATCH " + label + ": " + problems + " differing lines (want " + want.size()
        + ", got " + got.size() + ")");
    System.exit(1);
  }

  private static List<JsonNode> read(ObjectMapper json, Path p, long from, long to) throws Exception {
    List<JsonNode> out = new ArrayList<>();
    int lineNo = 0;
    for (String line : Files.readAllLines(p, StandardCharsets.UTF_8)) {
      lineNo++;
      if (line.isBlank()) {
        continue;
      }
      JsonNode n;
      try {
        n = json.readTree(line);
      } catch (Exception e) {
        throw new IllegalArgumentException(p + ":" + lineNo + ": not a JSON object: " + line, e);
      }
      long id = n.path("event_id").asLong(-1);
      if (id >= 0 && (id <= from || id > to)) {
        continue;
      }
      out.add(n);
    }
    return out;
  }
}
