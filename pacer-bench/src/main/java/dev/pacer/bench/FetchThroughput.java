package dev.pacer.bench;

import dev.pacer.cli.run.JvmOptions;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * {@code pacer fetch} when no ceiling binds, against its floor: the same URL list, the same number
 * of threads, the same local destination ({@link LocalDestination}, a JVM of its own that answers
 * without waiting for acknowledgements), fetched by {@code pacer fetch} (a JVM of its own, started
 * with pacer's JVM options as {@code ./pacer} starts it ({@link JvmOptions}), its ceiling far above
 * what the machine can do) and by {@link BareFetch}, a plain {@code java.net.http} loop writing
 * each body to a file (a JVM of its own too, with the JVM's defaults). They take turns, {@code
 * rounds} times, each round starting with the other one, and the ratio is that of the medians.
 *
 * <p>What each figure counts: items fetched and recorded ÷ the time from the first request to the
 * last outcome. For {@code pacer fetch} that is its summary's {@code done} ÷ {@code
 * elapsedSeconds}: the JVM's start and the enqueue are outside it (the enqueue has a figure of its
 * own). Both write every body to its own file; {@code pacer fetch} also forces it to disk and
 * records the item in PostgreSQL, which is the point of measuring it against a loop that does
 * neither.
 */
final class FetchThroughput {

  /** The destination's answer: small, so the work state's cost is what shows. */
  static final int BODY_BYTES = 1024;

  /** Far above anything two cores reach: the ceiling never binds. */
  static final int CEILING_PER_SECOND = 5000;

  /** One side-by-side measurement: the medians (per second) and every round's figure. */
  record Result(
      int urls,
      int threads,
      double pacerPerSecond,
      double barePerSecond,
      List<Double> pacerRounds,
      List<Double> bareRounds) {
    double ratio() {
      return pacerPerSecond / barePerSecond;
    }
  }

  private static final Pattern DONE = Pattern.compile("\"done\":(\\d+)");
  private static final Pattern ELAPSED = Pattern.compile("\"elapsedSeconds\":([0-9.]+)");

  private FetchThroughput() {}

  static Result measure(
      Database.Target db, int urlCount, int threads, int rounds, Path work, PrintStream log)
      throws IOException, InterruptedException {
    Process destination = startDestination(threads, work.resolve("destination.err"));
    try {
      int port = portOf(destination);
      Path list = work.resolve("fetch-urls.txt");
      List<String> lines = new ArrayList<>(urlCount);
      for (int i = 0; i < urlCount; i++) {
        lines.add("http://127.0.0.1:" + port + "/item/" + i);
      }
      Files.write(list, lines);
      List<Double> pacer = new ArrayList<>();
      List<Double> bare = new ArrayList<>();
      for (int round = 1; round <= rounds; round++) {
        boolean pacerFirst = round % 2 == 0;
        for (int side = 0; side < 2; side++) {
          boolean isPacer = (side == 0) == pacerFirst;
          Path out = work.resolve("fetch-out-" + round + (isPacer ? "-pacer" : "-bare"));
          double perSecond =
              isPacer
                  ? pacerFetch(db, list, urlCount, threads, out, round)
                  : bareFetch(list, urlCount, threads, out);
          (isPacer ? pacer : bare).add(perSecond);
          log.printf(
              Locale.ROOT,
              "[fetch, round %d] %s: %,.0f/s (%d URLs, %d threads)%n",
              round,
              isPacer ? "pacer fetch" : "bare java.net.http",
              perSecond,
              urlCount,
              threads);
          deleteTree(out);
        }
      }
      return new Result(
          urlCount, threads, Results.median(pacer), Results.median(bare), pacer, bare);
    } finally {
      destination.destroy();
      destination.waitFor();
    }
  }

  /** {@link LocalDestination} in a JVM of its own, serving until its input closes. */
  private static Process startDestination(int threads, Path stderr) throws IOException {
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dsun.net.httpserver.nodelay=true",
                "-cp",
                System.getProperty("java.class.path"),
                LocalDestination.class.getName(),
                Integer.toString(threads),
                Integer.toString(BODY_BYTES)));
    return new ProcessBuilder(command).redirectError(stderr.toFile()).start();
  }

  /** The port the destination printed. */
  private static int portOf(Process destination) throws IOException {
    String line =
        new BufferedReader(
                new InputStreamReader(destination.getInputStream(), StandardCharsets.UTF_8))
            .readLine();
    if (line == null) {
      throw new IllegalStateException("the destination did not start");
    }
    return Integer.parseInt(line.trim());
  }

  private static double bareFetch(Path list, int urlCount, int threads, Path out)
      throws IOException, InterruptedException {
    String reply =
        lastLine(
            child(
                BareFetch.class.getName(),
                List.of(list.toString(), Integer.toString(threads), out.toString()),
                out.resolveSibling(out.getFileName() + ".err")));
    String[] parts = reply.trim().split(" ");
    long ok = Long.parseLong(parts[0]);
    if (ok != urlCount) {
      throw new IllegalStateException("the bare loop fetched " + ok + " of " + urlCount);
    }
    return ok / Double.parseDouble(parts[1]);
  }

  private static double pacerFetch(
      Database.Target db, Path list, int urlCount, int threads, Path out, int round)
      throws IOException, InterruptedException {
    String summary =
        lastLine(
            childWith(
                JvmOptions.ofPacer(),
                "dev.pacer.cli.Main",
                List.of(
                    "fetch",
                    list.toString(),
                    "--job",
                    "bench-fetch-" + round + "-" + System.nanoTime(),
                    "--destination",
                    "bench-fetch-" + System.nanoTime(),
                    "--rate",
                    Integer.toString(CEILING_PER_SECOND),
                    "--concurrency",
                    Integer.toString(threads),
                    "--threads",
                    Integer.toString(threads),
                    // The run measures throughput, not the envelope: other work on the machine must
                    // not
                    // halt it.
                    "--max-load",
                    "10000",
                    "--out",
                    out.toString(),
                    "--no-progress",
                    "--db",
                    db.jdbcUrl()),
                out.resolveSibling(out.getFileName() + ".err")));
    long done = Long.parseLong(find(DONE, summary));
    if (done != urlCount) {
      throw new IllegalStateException(
          "pacer fetch did " + done + " of " + urlCount + ": " + summary);
    }
    return done / Double.parseDouble(find(ELAPSED, summary));
  }

  private static String find(Pattern p, String text) {
    Matcher m = p.matcher(text);
    if (!m.find()) {
      throw new IllegalStateException("no " + p + " in " + text);
    }
    return m.group(1);
  }

  /**
   * Runs {@code mainClass} in a JVM of its own on this classpath and returns its stdout; its stderr
   * goes to {@code stderr} (shown if it fails).
   */
  static List<String> child(String mainClass, List<String> args, Path stderr)
      throws IOException, InterruptedException {
    return childWith(List.of(), mainClass, args, stderr);
  }

  /** {@link #child}, with these JVM options. */
  static List<String> childWith(
      List<String> jvmOptions, String mainClass, List<String> args, Path stderr)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(jvmOptions);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
    command.addAll(args);
    Process p = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
    List<String> out = new ArrayList<>();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line; (line = r.readLine()) != null; ) {
        out.add(line);
      }
    }
    int code = p.waitFor();
    if (code != 0) {
      throw new IllegalStateException(
          mainClass + " exited " + code + ": " + out + "\n" + Files.readString(stderr));
    }
    return out;
  }

  private static String lastLine(List<String> lines) {
    if (lines.isEmpty()) {
      throw new IllegalStateException("no output");
    }
    return lines.get(lines.size() - 1);
  }

  static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  /** Standalone: {@code FetchThroughput [URLS [THREADS [ROUNDS]]]} on an embedded PostgreSQL. */
  public static void main(String[] args) throws Exception {
    int urls = args.length > 0 ? Integer.parseInt(args[0]) : 5000;
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : 32;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
    Path work = Files.createTempDirectory("pacer-fetch-bench");
    try (Database db = Database.embedded()) {
      Result r = measure(db.target(), urls, threads, rounds, work, System.out);
      System.out.printf(
          Locale.ROOT,
          "pacer fetch %,.0f/s, bare %,.0f/s: %.2f x%n",
          r.pacerPerSecond(),
          r.barePerSecond(),
          r.ratio());
    } finally {
      deleteTree(work);
    }
  }
}
