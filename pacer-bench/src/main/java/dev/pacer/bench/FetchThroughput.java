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
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * {@code pacer fetch} when no ceiling binds, against its floor: the same URL list, the same number
 * of threads, the same local destination ({@link LocalDestination}, a JVM of its own that answers
 * without waiting for acknowledgements), fetched by {@code pacer fetch} in both its layouts (a file
 * per body under {@code --out}, and WARC segments with {@code --warc}; a JVM of its own each,
 * started with pacer's JVM options as {@code ./pacer} starts it ({@link JvmOptions}), its ceiling
 * far above what the machine can do) and by {@link BareFetch}, a plain {@code java.net.http} loop
 * writing each body to a file unforced (a JVM of its own too, with the JVM's defaults). The bare
 * loop forcing each body and its directory, as {@code pacer fetch --fsync-each} does, runs too, for
 * comparison. They take turns, {@code rounds} times, each round starting with the next one, and the
 * ratios are those of the medians.
 *
 * <p>What each figure counts: items fetched and recorded ÷ the time from the first request to the
 * last outcome. For {@code pacer fetch} that is its summary's {@code done} ÷ {@code
 * elapsedSeconds}: the JVM's start and the enqueue are outside it (the enqueue has a figure of its
 * own). {@code pacer fetch} also makes its bodies durable in groups and records every item in
 * PostgreSQL, which is the point of measuring it against a loop that does neither.
 */
final class FetchThroughput {

  /** The destination's answer: small, so the work state's cost is what shows. */
  static final int BODY_BYTES = 1024;

  /** Far above anything two cores reach: the ceiling never binds. */
  static final int CEILING_PER_SECOND = 5000;

  /** Who fetches the list, in the order a round's first turn goes round. */
  enum Side {
    PACER_FILES("`pacer fetch`, a file per body", "pacer fetch"),
    PACER_WARC("`pacer fetch --warc`, WARC segments", "pacer fetch --warc"),
    BARE("bare `java.net.http` loop writing each body to a file, unforced", "bare java.net.http"),
    BARE_FORCED(
        "the bare loop forcing each body and its directory to disk", "bare java.net.http forced");

    final String title;
    final String shortName;

    Side(String title, String shortName) {
      this.title = title;
      this.shortName = shortName;
    }
  }

  /** One side-by-side measurement: every round's figure (per second) of every side. */
  record Result(int urls, int threads, Map<Side, List<Double>> rounds) {
    Result {
      rounds = Map.copyOf(rounds);
    }

    double median(Side side) {
      return Results.median(rounds.get(side));
    }

    /** {@code side}'s median ÷ the unforced bare loop's. */
    double ratio(Side side) {
      return median(side) / median(Side.BARE);
    }

    int roundCount() {
      return rounds.get(Side.BARE).size();
    }
  }

  private static final Pattern DONE = Pattern.compile("\"done\":(\\d+)");
  private static final Pattern ELAPSED = Pattern.compile("\"elapsedSeconds\":([0-9.]+)");

  private FetchThroughput() {}

  static Result measure(
      Database.Target db, int urlCount, int threads, int roundCount, Path work, PrintStream log)
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
      Map<Side, List<Double>> rounds = new EnumMap<>(Side.class);
      Side[] sides = Side.values();
      for (int round = 1; round <= roundCount; round++) {
        for (int turn = 0; turn < sides.length; turn++) {
          Side side = sides[(round - 1 + turn) % sides.length];
          Path out =
              work.resolve("fetch-out-" + round + "-" + side.name().toLowerCase(Locale.ROOT));
          double perSecond =
              switch (side) {
                case PACER_FILES -> pacerFetch(db, list, urlCount, threads, out, round, false);
                case PACER_WARC -> pacerFetch(db, list, urlCount, threads, out, round, true);
                case BARE -> bareFetch(list, urlCount, threads, out, false);
                case BARE_FORCED -> bareFetch(list, urlCount, threads, out, true);
              };
          rounds.computeIfAbsent(side, s -> new ArrayList<>()).add(perSecond);
          log.printf(
              Locale.ROOT,
              "[fetch, round %d] %s: %,.0f/s (%d URLs, %d threads)%n",
              round,
              side.shortName,
              perSecond,
              urlCount,
              threads);
          deleteTree(out);
        }
      }
      return new Result(urlCount, threads, rounds);
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

  private static double bareFetch(Path list, int urlCount, int threads, Path out, boolean force)
      throws IOException, InterruptedException {
    List<String> args =
        new ArrayList<>(List.of(list.toString(), Integer.toString(threads), out.toString()));
    if (force) {
      args.add("--force");
    }
    String reply =
        lastLine(
            child(BareFetch.class.getName(), args, out.resolveSibling(out.getFileName() + ".err")));
    String[] parts = reply.trim().split(" ");
    long ok = Long.parseLong(parts[0]);
    if (ok != urlCount) {
      throw new IllegalStateException("the bare loop fetched " + ok + " of " + urlCount);
    }
    return ok / Double.parseDouble(parts[1]);
  }

  private static double pacerFetch(
      Database.Target db, Path list, int urlCount, int threads, Path out, int round, boolean warc)
      throws IOException, InterruptedException {
    List<String> args =
        new ArrayList<>(
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
                // The run measures throughput, not the envelope: other work on the machine must not
                // halt it.
                "--max-load",
                "10000",
                "--out",
                out.toString(),
                "--no-progress",
                "--db",
                db.jdbcUrl()));
    if (warc) {
      args.addAll(List.of("--warc", out.resolve("segments").toString()));
    }
    String summary =
        lastLine(
            childWith(
                JvmOptions.ofPacer(),
                "dev.pacer.cli.Main",
                args,
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
      for (Side side : Side.values()) {
        System.out.printf(
            Locale.ROOT,
            "%s: %,.0f/s, %.2f x the bare loop%n",
            side.shortName,
            r.median(side),
            r.ratio(side));
      }
    } finally {
      deleteTree(work);
    }
  }
}
