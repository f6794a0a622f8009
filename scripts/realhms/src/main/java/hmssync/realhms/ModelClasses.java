package hmssync.realhms;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The metastore's persistent classes, read from the package.jdo mapping its jar ships. */
final class ModelClasses {
  private static final Pattern PACKAGE = Pattern.compile("<package\\s+name=\"([^\"]+)\"");
  private static final Pattern CLASS = Pattern.compile("<class\\s+name=\"([^\"]+)\"([^>]*)>");

  private ModelClasses() {}

  static List<String> list() throws IOException {
    String jdo;
    try (InputStream in = ModelClasses.class.getClassLoader().getResourceAsStream("package.jdo")) {
      if (in == null) {
        throw new IOException("package.jdo is not on the class path: is the metastore server jar missing?");
      }
      jdo = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Matcher pkg = PACKAGE.matcher(jdo);
    if (!pkg.find()) {
      throw new IOException("package.jdo names no package");
    }
    List<String> out = new ArrayList<>();
    Matcher m = CLASS.matcher(jdo);
    while (m.find()) {
      // Embedded-only classes have no table of their own.
      if (!m.group(2).contains("embedded-only=\"true\"")) {
        out.add(pkg.group(1) + "." + m.group(1));
      }
    }
    return out;
  }
}
