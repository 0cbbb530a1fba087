package dev.pacer.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The documentation's code, read from where it is compiled: an example class marks a region with
 * {@code // tag::NAME[]} and {@code // end::NAME[]}, and a Markdown file shows it in the fenced
 * block that follows a {@code <!-- snippet: Class#NAME -->} line. {@link SnippetsTest} fails when
 * the two differ, so what a reader copies is what the examples' tests ran.
 */
final class Snippets {

  private static final Pattern MARKER =
      Pattern.compile("<!-- snippet: (\\w+)#([\\w-]+) -->\\R```java\\R(.*?)```", Pattern.DOTALL);
  private static final Pattern TAG = Pattern.compile("// tag::([\\w-]+)\\[]");

  private Snippets() {}

  /** One block shown in a document: the region it names and the text it shows. */
  record Shown(Path document, String exampleClass, String region, String text) {
    String key() {
      return exampleClass + "#" + region;
    }
  }

  static List<Shown> shownIn(Path document) {
    List<Shown> shown = new ArrayList<>();
    Matcher m = MARKER.matcher(read(document));
    while (m.find()) {
      shown.add(new Shown(document, m.group(1), m.group(2), m.group(3)));
    }
    return shown;
  }

  /** The tagged regions of an example's source, each without its markers and common indent. */
  static Map<String, String> regionsOf(Path source) {
    Map<String, String> regions = new LinkedHashMap<>();
    List<String> lines = read(source).lines().toList();
    for (int i = 0; i < lines.size(); i++) {
      Matcher tag = TAG.matcher(lines.get(i));
      if (!tag.find()) {
        continue;
      }
      String end = "// end::" + tag.group(1) + "[]";
      int j = i + 1;
      while (j < lines.size() && !lines.get(j).contains(end)) {
        j++;
      }
      if (j == lines.size()) {
        throw new IllegalStateException(source + ": region " + tag.group(1) + " never ends");
      }
      regions.put(tag.group(1), dedent(lines.subList(i + 1, j)));
    }
    return regions;
  }

  private static String dedent(List<String> lines) {
    int indent =
        lines.stream()
            .filter(l -> !l.isBlank())
            .mapToInt(l -> l.length() - l.stripLeading().length())
            .min()
            .orElse(0);
    StringBuilder text = new StringBuilder();
    for (String line : lines) {
      text.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
    }
    return text.toString();
  }

  private static String read(Path path) {
    try {
      return Files.readString(path);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
