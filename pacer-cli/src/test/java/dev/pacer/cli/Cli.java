package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.run.JvmOptions;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Runs the CLI in this JVM (like a user would, minus System.exit) or as a separate JVM. */
final class Cli {

  record Result(int code, String out, String err) {
    /** The last line of stdout: the JSON summary of a fetch. */
    String summary() {
      String[] lines = out.strip().split("\n");
      return lines[lines.length - 1];
    }

    long number(String field) {
      Matcher m = Pattern.compile("\"" + field + "\":(-?[0-9.]+)").matcher(summary());
      assertThat(m.find()).as("field %s in %s", field, summary()).isTrue();
      return (long) Double.parseDouble(m.group(1));
    }

    String text(String field) {
      Matcher m = Pattern.compile("\"" + field + "\":(null|\"([^\"]*)\"|true|false)").matcher(summary());
      assertThat(m.find()).as("field %s in %s", field, summary()).isTrue();
      return m.group(2) != null ? m.group(2) : m.group(1);
    }
  }

  private Cli() {}

  static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Main.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
    return new Result(code, out.toString(), err.toString());
  }

  /** Starts {@code pacer ARGS} as its own JVM; stdout and stderr go to the given files. */
  static Process spawn(Map<String, String> env, Path stdout, Path stderr, String... args)
      throws IOException {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(JvmOptions.ofPacer());
    command.addAll(List.of("-XX:+UseSerialGC",
        "-cp", System.getProperty("java.class.path"), "dev.pacer.cli.Main"));
    command.addAll(List.of(args));
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectOutput(stdout.toFile())
        .redirectError(stderr.toFile());
    builder.environment().remove("PACER_DB");
    builder.environment().putAll(env);
    return builder.start();
  }
}
