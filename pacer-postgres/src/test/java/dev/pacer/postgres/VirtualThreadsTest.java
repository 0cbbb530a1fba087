package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.pacer.testing.Arrival;
import dev.pacer.testing.DoorExtension;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.TurnTrace;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The blocking {@code send} of {@code PacedHttpClient} on virtual threads, as an application on
 * them sends: 10,000 virtual threads on one limiter at 100/s, a real PostgreSQL cursor, each
 * sending one request through the JDK's client, which waits for its turn in {@code acquire()}. The
 * build is Java 17, so the threads run in a child JVM ({@link VirtualThreadWorker}, which sends
 * with the public API alone and reads the limiter's permits through a test probe only once its
 * threads have ended) on a JDK of 21 or later, found by {@link #virtualThreadJdk()}; without one
 * this test fails, since CI has one.
 *
 * <p>It asserts that no virtual thread pinned its carrier (JFR's {@code jdk.VirtualThreadPinned},
 * every event, against a deliberate pin that must be seen), that no request failed, that the
 * threads interrupted at the end gave every permit back, and that the run held to {@link
 * FleetBounds} at the door: the busiest 1-s window from the first request, the aggregate and the
 * delivered rate over the steady part ({@link RunArrivals#steady}), the turns given up as late.
 * Each request is traced from its turn to the door ({@link TurnTrace}): the turns are held to the
 * window with no excuse, and a window broken at the door by a request held up after its hand-over
 * to the JDK's client, where no check can see it, is reported as skipped with its figures. The twin
 * runs the same child twice at once, each on a {@code LocalCursor}, as per-process pacers would,
 * and must break the window and the aggregate.
 */
class VirtualThreadsTest {

  /** Names a JDK home of 21 or later to run the child on; the environment's comes second. */
  static final String JDK_PROPERTY = "pacer.virtualThreadsJdk";

  static final String JDK_ENV = "PACER_VIRTUAL_THREADS_JDK";

  private static final int THREADS = 10_000;
  private static final double RATE = 100;
  private static final int CONCURRENCY = 16;
  private static final long RUN_MILLIS = 8_000;

  /**
   * The twin: its steady part, as the run's, starts {@link RunArrivals#START_SECONDS} after GO,
   * when two children of 10,000 threads each on one core may still be starting them, and then lasts
   * long enough for 2 x 100/s to break the aggregate over two seconds.
   */
  private static final long TWIN_MILLIS = 3_000;

  /** One door for both runs: each run sends to a path of its own. */
  @RegisterExtension static final DoorExtension door = new DoorExtension();

  /** What one child reported: its {@code RESULT} pairs, its steady part's turns, its stderr. */
  private record Child(Map<String, String> result, TurnsTaken steady, int exit, String errors) {

    int count(String key) {
      return Integer.parseInt(result.get(key));
    }
  }

  /** A run's arrivals on its path, each request's turn and send, and what its children said. */
  private record Run(List<Arrival> arrivals, TurnTrace trace, List<Child> children) {

    Timeline timeline() {
      return Timeline.of(arrivals);
    }
  }

  @Test
  void tenThousandVirtualThreadsKeepTheCeilingAtTheDoorAndNonePinsItsCarrier() throws Exception {
    Run run = run("shared", 1, RUN_MILLIS);
    Child child = run.children().get(0);
    Timeline arrivals = run.timeline();
    System.out.printf(
        "10,000 virtual threads: at the door %s; as sent %s; turns %s; %s; steady"
            + " part %s%n%s%n%s%n%s%nthe child's stderr:%n%s%n",
        arrivals,
        run.trace().sends(),
        run.trace().turns(),
        child.result(),
        child.steady(),
        run.trace().busiestWindow(run.arrivals()),
        run.trace().stampDelays(run.arrivals()),
        run.trace().holes(),
        child.errors());

    assertThat(child.exit()).as("child exit; its stderr:%n%s", child.errors()).isZero();
    assertThat(child.result())
        .as("the child's report")
        .containsKeys("pinned", "control", "sent", "failed", "alive", "permits");
    assertThat(child.count("control"))
        .as("the deliberate pin was seen, so the count below can see one")
        .isGreaterThan(0);
    assertThat(child.count("pinned"))
        .as(
            "virtual threads that pinned their carrier; the child's" + " stderr:%n%s",
            child.errors())
        .isZero();
    assertThat(child.count("failed")).as("requests that failed").isZero();
    assertThat(child.count("alive")).as("threads alive after the interrupt").isZero();
    assertThat(child.result().get("permits"))
        .as("permits back after the interrupt")
        .isEqualTo(CONCURRENCY + "/" + CONCURRENCY);
    assertThat(arrivals.size())
        .as("arrivals, against the child's count of requests sent")
        .isGreaterThanOrEqualTo(child.count("sent"));
    FleetBounds bounds =
        FleetBounds.at(RATE, "10,000 virtual threads through PacedHttpClient", door);
    Timeline steady = RunArrivals.steady(arrivals);
    // A stall of the sender's JVM (its own sampler's measure, not this JVM's) costs the turns
    // that fall in it: allowed, and not counted against the delivered rate.
    bounds.assertDelivered(steady, RATE, child.steady().stalledNanos() / 1e9);
    bounds.assertFewLateTurnsBesideStalls(
        child.steady().late(),
        child.steady().sent() + child.steady().late(),
        child.steady().turnsInStalls());
    // Last, since a window broken by a request held up after its hand-over skips the rest.
    bounds.assertHeld(arrivals, steady, run.trace(), run.arrivals());
  }

  @Test
  void twoProcessesPacingEachOnItsOwnCursorBreakTheCeiling() throws Exception {
    Run run = run("local", 2, TWIN_MILLIS);
    for (Child child : run.children()) {
      assertThat(child.exit()).as("child exit; its stderr:%n%s", child.errors()).isZero();
      assertThat(child.count("failed")).as("requests that failed").isZero();
    }
    FleetBounds bounds =
        FleetBounds.at(
            RATE,
            "10,000 virtual threads in each of two processes," + " a local cursor each",
            door);
    bounds.assertWindowBroke(run.timeline());
    bounds.assertAggregateBroke(RunArrivals.steady(run.timeline()));
  }

  /**
   * Starts {@code processes} children in {@code mode} on one destination, each with {@link
   * #THREADS} virtual threads pacing at {@link #RATE}, says GO to all once all are ready, and
   * gathers what they sent and reported after {@code runMillis}.
   */
  private static Run run(String mode, int processes, long runMillis) throws Exception {
    String java = virtualThreadJdk().resolve("bin").resolve("java").toString();
    String destination = "virtual-" + UUID.randomUUID().toString().substring(0, 8);
    String path = "/" + destination;
    List<Process> children = new ArrayList<>();
    List<Path> errors = new ArrayList<>();
    try {
      for (int i = 0; i < processes; i++) {
        Path err = Files.createTempFile("virtual-threads", ".err");
        errors.add(err);
        // The child's collections and safepoints go to its stderr, printed by the test, stamped
        // on System.nanoTime() as the trace is: a pause stalls every thread of the child, between
        // a turn's check and its request's write too, where the limiter cannot see it.
        children.add(
            new ProcessBuilder(
                    java,
                    "-Xlog:gc,safepoint:stderr:timenanos",
                    "-cp",
                    System.getProperty("java.class.path"),
                    VirtualThreadWorker.class.getName(),
                    mode,
                    TestDatabase.jdbcUrl(),
                    destination,
                    String.valueOf(processes),
                    door.url(path),
                    "process-" + i,
                    String.valueOf(THREADS),
                    String.valueOf(RATE),
                    String.valueOf(CONCURRENCY),
                    String.valueOf(runMillis))
                .redirectError(err.toFile())
                .start());
      }
      List<BufferedReader> outputs = new ArrayList<>();
      for (Process child : children) {
        BufferedReader out =
            new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).as("child start-up").isEqualTo("READY");
        outputs.add(out);
      }
      for (Process child : children) {
        Writer in = new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8);
        in.write("GO\n");
        in.flush();
      }
      TurnTrace trace = new TurnTrace(RATE);
      List<CompletableFuture<Map<String, String>>> results = new ArrayList<>();
      List<CompletableFuture<TurnsTaken>> steadies = new ArrayList<>();
      for (BufferedReader out : outputs) {
        CompletableFuture<TurnsTaken> steady = new CompletableFuture<>();
        steadies.add(steady);
        results.add(CompletableFuture.supplyAsync(() -> read(out, trace, steady)));
      }
      List<Child> reported = new ArrayList<>();
      for (int i = 0; i < processes; i++) {
        Process child = children.get(i);
        if (!child.waitFor(60, TimeUnit.SECONDS)) {
          child.destroyForcibly();
        }
        reported.add(
            new Child(
                results.get(i).get(60, TimeUnit.SECONDS),
                steadies.get(i).getNow(TurnsTaken.NONE),
                child.waitFor(),
                Files.readString(errors.get(i))));
      }
      return new Run(RunArrivals.of(door.arrivals(), path), trace, reported);
    } finally {
      children.forEach(Process::destroyForcibly);
      for (Path err : errors) {
        Files.deleteIfExists(err);
      }
    }
  }

  /**
   * Reads a child's report to its end: its traced requests into {@code trace}, its steady part's
   * turns into {@code steady}; returns its {@code RESULT} pairs.
   */
  private static Map<String, String> read(
      BufferedReader out, TurnTrace trace, CompletableFuture<TurnsTaken> steady) {
    Map<String, String> result = new HashMap<>();
    try {
      String line;
      while ((line = out.readLine()) != null) {
        if (TraceLines.read(line, trace)) {
          continue;
        }
        if (line.startsWith("RESULT ")) {
          for (String pair : line.substring(7).split(" ")) {
            String[] kv = pair.split("=", 2);
            result.put(kv[0], kv[1]);
          }
        } else {
          TurnsTaken.parse(line).ifPresent(steady::complete);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return result;
  }

  /**
   * A JDK home of 21 or later: the one named by {@value #JDK_PROPERTY} or {@value #JDK_ENV} (which
   * must be one), else the one running this test if it is recent enough, else the oldest such under
   * {@code /usr/lib/jvm} (the oldest is the strictest: up to JDK 23 a {@code synchronized} block
   * around a blocking call pins too).
   */
  static Path virtualThreadJdk() throws IOException {
    String named =
        Optional.ofNullable(System.getProperty(JDK_PROPERTY)).orElse(System.getenv(JDK_ENV));
    if (named != null && !named.isBlank()) {
      Path home = Paths.get(named);
      int feature = featureVersion(home);
      if (feature < 21) {
        fail(
            JDK_PROPERTY
                + "/"
                + JDK_ENV
                + " names "
                + home
                + ", which is "
                + (feature == 0
                    ? "not a JDK home (no release file with JAVA_VERSION)"
                    : "JDK " + feature)
                + "; virtual threads need 21 or later");
      }
      return home;
    }
    Path running = Paths.get(System.getProperty("java.home"));
    if (Runtime.version().feature() >= 21) {
      return running;
    }
    Path root = Paths.get("/usr/lib/jvm");
    List<Path> found = new ArrayList<>();
    if (Files.isDirectory(root)) {
      try (Stream<Path> homes = Files.list(root)) {
        homes
            .filter(home -> Files.isExecutable(home.resolve("bin").resolve("java")))
            .filter(home -> featureVersion(home) >= 21)
            .forEach(found::add);
      }
    }
    return found.stream()
        .min(
            Comparator.comparingInt(VirtualThreadsTest::featureVersion)
                .thenComparing(Path::toString))
        .orElseGet(
            () ->
                fail(
                    "no JDK of 21 or later found to run virtual threads on: the build"
                        + " runs on "
                        + Runtime.version()
                        + " ("
                        + running
                        + "), and "
                        + root
                        + " has none."
                        + " Name one with -D"
                        + JDK_PROPERTY
                        + "=<home> or "
                        + JDK_ENV
                        + "=<home>"));
  }

  /** The feature version in {@code home}'s release file, or 0 if it has none. */
  private static int featureVersion(Path home) {
    Path release = home.resolve("release");
    if (!Files.isRegularFile(release)) {
      return 0;
    }
    Properties p = new Properties();
    try (var in = Files.newBufferedReader(release)) {
      p.load(in);
    } catch (IOException e) {
      return 0;
    }
    String version = p.getProperty("JAVA_VERSION", "").replace("\"", "");
    String feature = version.split("[.+-]", 2)[0];
    try {
      return Integer.parseInt(feature);
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
