package hmssync.realhms;

import java.util.List;

/**
 * Partition names as the hmssync reference (hms.md §4) states Hive forms them, written from that
 * text rather than from Hive, so the workload's expectations do not share Hive's code.
 */
final class PartName {
  static final String DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__";
  private static final String SPECIAL = "\"#%'*/:=?\\\u007f{[]^";

  private PartName() {}

  static String make(List<String> keys, List<String> values) {
    if (keys.size() != values.size()) {
      throw new IllegalArgumentException("keys " + keys + " and values " + values + " differ in length");
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < keys.size(); i++) {
      if (i > 0) {
        b.append('/');
      }
      b.append(escape(keys.get(i))).append('=');
      String v = values.get(i);
      b.append(v == null || v.isEmpty() ? DEFAULT_PARTITION : escape(v));
    }
    return b.toString();
  }

  static String escape(String s) {
    StringBuilder b = new StringBuilder();
    // Code points, not chars: non-ASCII is kept as it is, including characters outside the BMP.
    s.codePoints().forEach(c -> {
      if (c < 0x20 || SPECIAL.indexOf(c) >= 0) {
        b.append('%').append(String.format("%02X", c));
      } else {
        b.appendCodePoint(c);
      }
    });
    return b.toString();
  }
}
