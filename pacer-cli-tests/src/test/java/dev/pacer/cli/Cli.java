package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.run.JvmOptions;
import dev.pacer.cli.run.Worker;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
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
      Matcher m =
          Pattern.compile("\"" + field + "\":(null|\"([^\"]*)\"|true|false)").matcher(summary());
      assertThat(m.find()).as("field %s in %s", field, summary()).isTrue();
      return m.group(2) != null ? m.group(2) : m.group(1);
    }

    /** What the run's worker processes said of their late turns, in {@code err}. */
    LateTurns lateTurns() {
      return LateTurns.in(err);
    }
  }

  /**
   * The turns a run's worker processes gave up as late, and those they took, summed over the
   * workers that said so at their end ({@link Worker#LATE_TURNS}, one line each), with the turns
   * their own measured stalls may have cost. Only a run whose workers log where the test reads them
   * has them: one started with {@link #spawn} or {@link #runAlone}; in this JVM ({@link #run}) the
   * workers log to this JVM's own stderr.
   */
  record LateTurns(int workers, long skipped, long turns, long stalls, long turnsInStalls) {

    private static final Pattern LINE = line();

    static LateTurns in(String stderr) {
      int workers = 0;
      long skipped = 0;
      long turns = 0;
      long stalls = 0;
      long turnsInStalls = 0;
      Matcher m = LINE.matcher(stderr);
      while (m.find()) {
        workers++;
        skipped += Long.parseLong(m.group(1));
        turns += Long.parseLong(m.group(2));
        stalls += Long.parseLong(m.group(4));
        turnsInStalls += Long.parseLong(m.group(6));
      }
      return new LateTurns(workers, skipped, turns, stalls, turnsInStalls);
    }

    /**
     * Asserts that {@code workers} worker processes said how many turns they gave up as late, and
     * that together they gave up no more than {@code bounds} allows in a run whose door saw {@code
     * run}, beside the stalls they measured.
     */
    void assertFew(FleetBounds bounds, int workers, Timeline run) {
      assertThat(this.workers)
          .as("workers that said how many turns they gave up as late, %s", this)
          .isEqualTo(workers);
      bounds.assertFewLateTurns(skipped, turns, run, turnsInStalls);
    }

    /**
     * Asserts that {@code workers} worker processes of {@code threads} fetch threads each said how
     * many turns they gave up as late, and that together they gave up no more than {@code bounds}
     * allows workers that start cold on new hosts at once ({@link
     * FleetBounds#assertFewLateTurnsOfColdWorkers}), beside the stalls they measured.
     */
    void assertFewOfColdWorkers(FleetBounds bounds, int workers, int threads, Timeline run) {
      assertFewOfColdWorkers(bounds, workers, threads, 1, run);
    }

    /**
     * As {@link #assertFewOfColdWorkers(FleetBounds, int, int, Timeline)}, the workers starting
     * cold {@code coldMoments} times: at the start and at each return from an outage.
     */
    void assertFewOfColdWorkers(
        FleetBounds bounds, int workers, int threads, int coldMoments, Timeline run) {
      assertThat(this.workers)
          .as("workers that said how many turns they gave up as late, %s", this)
          .isEqualTo(workers);
      bounds.assertFewLateTurnsOfColdWorkers(
          skipped, turns, workers, threads, coldMoments, run, turnsInStalls);
    }

    @Override
    public String toString() {
      return skipped
          + " turn(s) given up as late beside "
          + turns
          + " taken, by "
          + workers
          + " worker(s), which stalled "
          + stalls
          + " time(s) beyond the late-turn limit, costing up to "
          + turnsInStalls
          + " turn(s)";
    }

    /** {@link Worker#LATE_TURNS} with a number where it has a placeholder. */
    private static Pattern line() {
      String[] parts = Worker.LATE_TURNS.split("\\{}", -1);
      assertThat(parts).as(Worker.LATE_TURNS).hasSize(7);
      StringBuilder pattern = new StringBuilder(Pattern.quote(parts[0]));
      for (int i = 1; i < parts.length; i++) {
        pattern.append("(\\d+)").append(Pattern.quote(parts[i]));
      }
      return Pattern.compile(pattern.toString());
    }
  }

  private Cli() {}

  static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Main.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
    return new Result(code, out.toString(), err.toString());
  }

  /**
   * Runs {@code pacer ARGS} as its own JVM, as {@link #run} does in this one, its stdout and stderr
   * (with its workers' logs) kept in {@code dir} as {@code name.out} and {@code name.err}.
   */
  static Result runAlone(Path dir, String name, String... args) throws Exception {
    Path out = dir.resolve(name + ".out");
    Path err = dir.resolve(name + ".err");
    Process p = spawn(Map.of(), out, err, args);
    try {
      assertThat(p.waitFor(300, TimeUnit.SECONDS)).as("pacer %s finished", name).isTrue();
    } finally {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
    return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  /**
   * Starts {@code pacer ARGS} as its own JVM; stdout and stderr go to the given files. It and its
   * workers log every turn given up as late ({@link GivenUpTurns}).
   */
  static Process spawn(Map<String, String> env, Path stdout, Path stderr, String... args)
      throws IOException {
    List<String> command =
        new ArrayList<>(
            List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(JvmOptions.ofPacer());
    command.add(GivenUpTurns.LOG_EACH);
    command.addAll(
        List.of(
            "-XX:+UseSerialGC",
            "-cp",
            System.getProperty("java.class.path"),
            "dev.pacer.cli.Main"));
    command.addAll(List.of(args));
    ProcessBuilder builder =
        new ProcessBuilder(command).redirectOutput(stdout.toFile()).redirectError(stderr.toFile());
    builder.environment().remove("PACER_DB");
    builder.environment().put("PACER_JAVA_OPTS", GivenUpTurns.LOG_EACH);
    builder.environment().putAll(env);
    return builder.start();
  }
}
