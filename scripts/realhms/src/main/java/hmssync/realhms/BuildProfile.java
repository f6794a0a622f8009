package hmssync.realhms;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** What the Maven profile that built this class path chose (realhms.properties, filtered by Maven). */
final class BuildProfile {
  private BuildProfile() {}

  static String get(String key) {
    Properties p = new Properties();
    try (InputStream in = BuildProfile.class.getClassLoader().getResourceAsStream("realhms.properties")) {
      if (in == null) {
        throw new IllegalStateException("realhms.properties missing from the class path: build with mvn compile");
      }
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String v = p.getProperty(key);
    if (v == null || v.startsWith("${")) {
      throw new IllegalStateException("realhms.properties has no " + key + ": was a Maven profile active?");
    }
    return v;
  }
}
