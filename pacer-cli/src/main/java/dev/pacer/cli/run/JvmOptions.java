package dev.pacer.cli.run;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The JVM options pacer runs with, written once in the resource {@value #RESOURCE} (where each
 * one's reason is given): {@code ./pacer} starts the CLI's JVM with them, {@link Conveyor} its
 * worker JVMs, and the benchmarks the {@code pacer} they measure.
 */
public final class JvmOptions {

  static final String RESOURCE = "/dev/pacer/cli/jvm.options";

  private JvmOptions() {}

  /** The options, in the order written. */
  public static List<String> ofPacer() {
    try (InputStream in = JvmOptions.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is missing from the classpath");
      }
      List<String> options = new ArrayList<>();
      BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      for (String line; (line = lines.readLine()) != null; ) {
        String option = line.strip();
        if (!option.isEmpty() && !option.startsWith("#")) {
          options.add(option);
        }
      }
      return List.copyOf(options);
    } catch (IOException e) {
      throw new UncheckedIOException("could not read " + RESOURCE, e);
    }
  }
}
