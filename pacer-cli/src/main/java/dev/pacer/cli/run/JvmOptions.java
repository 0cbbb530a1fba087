package dev.pacer.cli.run;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The JVM options pacer runs with: those written once in the resource {@value #RESOURCE} (where
 * each one's reason is given), then the user's {@value #ENVIRONMENT}, split at whitespace, which
 * therefore win. {@code ./pacer} starts the CLI's JVM with them, {@link Conveyor} its worker JVMs,
 * and the benchmarks the {@code pacer} they measure.
 */
public final class JvmOptions {

  static final String RESOURCE = "/dev/pacer/cli/jvm.options";
  static final String ENVIRONMENT = "PACER_JAVA_OPTS";

  private JvmOptions() {}

  /** The options, the resource's in the order written, then the environment's. */
  public static List<String> ofPacer() {
    try (InputStream in = JvmOptions.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is missing from the classpath");
      }
      return of(new String(in.readAllBytes(), StandardCharsets.UTF_8), System.getenv(ENVIRONMENT));
    } catch (IOException e) {
      throw new UncheckedIOException("could not read " + RESOURCE, e);
    }
  }

  /**
   * The options of {@code written} (one a line; blank lines and lines beginning with {@code #}
   * skipped), then those of {@code fromEnvironment} (null when unset).
   */
  static List<String> of(String written, String fromEnvironment) {
    List<String> options = new ArrayList<>();
    for (String line : written.split("\\R")) {
      String option = line.strip();
      if (!option.isEmpty() && !option.startsWith("#")) {
        options.add(option);
      }
    }
    if (fromEnvironment != null && !fromEnvironment.isBlank()) {
      options.addAll(List.of(fromEnvironment.strip().split("\\s+")));
    }
    return List.copyOf(options);
  }
}
