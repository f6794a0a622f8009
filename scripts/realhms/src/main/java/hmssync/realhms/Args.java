package hmssync.realhms;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/** Minimal {@code --name value} command-line parsing; unknown names are an error. */
final class Args {
  private final Map<String, String> values = new HashMap<>();
  private final Set<String> used = new HashSet<>();

  Args(String[] args) {
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument " + a + ": arguments are --name value");
      }
      String name = a.substring(2);
      int eq = name.indexOf('=');
      if (eq >= 0) {
        values.put(name.substring(0, eq), name.substring(eq + 1));
      } else if (i + 1 < args.length) {
        values.put(name, args[++i]);
      } else {
        throw new IllegalArgumentException("--" + name + " needs a value");
      }
    }
  }

  String value(String name, String dflt) {
    used.add(name);
    String v = values.get(name);
    if (v == null && dflt == null) {
      throw new IllegalArgumentException("--" + name + " is required");
    }
    return v == null ? dflt : v;
  }

  int intValue(String name, int dflt) {
    String v = value(name, Integer.toString(dflt));
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + name + " " + v + ": want an integer", e);
    }
  }

  void rejectUnknown() {
    for (String k : values.keySet()) {
      if (!used.contains(k)) {
        throw new IllegalArgumentException("unknown option --" + k);
      }
    }
  }
}
