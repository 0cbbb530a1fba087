package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.FleetBounds;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the destination answers reaches every process, with real worker JVMs and the arrivals
 * measured at the destination: a {@code Retry-After} pauses the whole fleet, for no longer than
 * {@code --max-retry-after}, and a lockout stops every job on the destination. Each has a
 * per-process twin ({@code --pacing PER_PROCESS}, an in-memory cursor per process) that fails the
 * same assertion: only the process that heard the answer obeys it.
 */
class FleetAnswersTest {

  private static final int RATE = 7;
  private static final long SECOND = 1_000_000_000L;

  /**
   * Requests another process sent before it heard the answer arrive within milliseconds of it; 100
   * ms is less than one turn at 7/s (143 ms), so a turn taken after the answer is still caught.
   */
  private static final long ON_THE_WIRE = 100_000_000L;

  /** The items of the run a Retry-After of a day is answered in. */
  private static final int ITEMS_PAUSED = 90;

  @TempDir Path dir;
  private TestDestination destination;

  @BeforeEach
  void start() throws Exception {
    destination = new TestDestination();
  }

  @AfterEach
  void stop() {
    destination.close();
  }

  private String[] fetchArgs(
      String job, String destinationName, Path input, String pacing, String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "fetch",
                input.toString(),
                "--job",
                job,
                "--destination",
                destinationName,
                "--db",
                TestDatabase.jdbcUrl(),
                "--out",
                dir.resolve("out-" + job).toString(),
                "--max-load",
                "1000",
                "--no-progress",
                "--rate",
                Integer.toString(RATE),
                "--pacing",
                pacing,
                // Each process claims one item at a time, so that every one fetches until the job
                // ends and the answers reach processes that are fetching: leasing ahead, the first
                // up would hold most of a job this small.
                "--outage-buffer",
                "0"));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  @Test
  void retryAfterPausesEveryProcessOfTheFleet() throws Exception {
    List<TestDestination.Arrival> arrivals = retryAfterRun("FLEET");
    long answered = answerAt(arrivals, 429);
    long resumed = firstAfter(arrivals, answered + ON_THE_WIRE);
    assertThat(count(arrivals, answered + ON_THE_WIRE, answered + 3 * SECOND))
        .as("requests in the 3 s of Retry-After: %s", TestDestination.describe(arrivals))
        .isZero();
    assertThat((resumed - answered) / 1e9)
        .as("the fleet resumed when the pause ended")
        .isBetween(3.0, 3.5);
    FleetBounds.at(RATE, "retry-after, the fleet").assertHeld(TestDestination.timeline(arrivals));
  }

  @Test
  void perProcessPacingPausesOnlyTheProcessThatHeardTheRetryAfter() throws Exception {
    List<TestDestination.Arrival> arrivals = retryAfterRun("PER_PROCESS");
    long answered = answerAt(arrivals, 429);
    assertThat(count(arrivals, answered + ON_THE_WIRE, answered + 3 * SECOND))
        .as("the other processes kept sending")
        .isGreaterThan(0);
  }

  /** 3 worker JVMs x 6 threads; the 30th item is answered 429 with Retry-After: 3, once. */
  private List<TestDestination.Arrival> retryAfterRun(String pacing) throws Exception {
    String name = "retry-after-" + pacing.toLowerCase() + "-" + ProcessHandle.current().pid();
    destination
        .withRetryAfter("3")
        .answering((path, attempt) -> path.equals("/item/30") && attempt == 1 ? 429 : 200);
    Path input = Files.write(dir.resolve(name + ".txt"), destination.items(90));
    Cli.Result run =
        Cli.run(
            fetchArgs(
                name,
                name,
                input,
                pacing,
                "--processes",
                "3",
                "--threads",
                "6",
                "--concurrency",
                "6"));
    assertThat(run.code()).as(run.err()).isZero();
    assertThat(run.number("done")).isEqualTo(90);
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    long answered = answerAt(arrivals, 429);
    System.out.printf(
        "retry-after %s: %s; %d requests in the 3 s after the 429 (beyond %d ms on"
            + " the wire); first request after it %.3f s later%n",
        pacing,
        TestDestination.timeline(arrivals),
        count(arrivals, answered + ON_THE_WIRE, answered + 3 * SECOND),
        ON_THE_WIRE / 1_000_000,
        (firstAfter(arrivals, answered + ON_THE_WIRE) - answered) / 1e9);
    return arrivals;
  }

  /**
   * A {@code Retry-After} of a day, on a 429 and later on a 503, under {@code --max-retry-after 2}:
   * 3 worker JVMs x 6 threads at 7/s, the first request once all three have sent one answered 429,
   * and the 15th request after it 503, once each. For each answer the cursor row records a pause
   * that ends within a second of 2 s after the answer arrived, not a day (the row is read as the
   * run goes, each new pause once); from the moment it is recorded no process sends anything for
   * those 2 s; and the fleet resumes as the pause ends, and finishes the run. Turns granted between
   * the answer and the record are not recalled: that lag is printed. The run is its own JVM, so
   * that a pause of a day fails the test in 90 s rather than holding it for the day.
   */
  @Test
  void aRetryAfterOfADayPausesTheFleetForTheCapAlone() throws Exception {
    String name = "retry-after-day-" + ProcessHandle.current().pid();
    long cap = 2 * SECOND;
    // Once every worker is fetching, so that the pause has processes to reach: on a loaded
    // machine a worker's JVM may start seconds after the others.
    AtomicInteger sinceThe429 = new AtomicInteger(-1);
    destination
        .withRetryAfter("86400")
        .answering(
            (path, attempt) -> {
              if (attempt > 1) {
                return 200;
              }
              if (sinceThe429.get() < 0) {
                return workersSeen() == 3 && sinceThe429.compareAndSet(-1, 0) ? 429 : 200;
              }
              return sinceThe429.incrementAndGet() == 15 ? 503 : 200;
            });
    Path input = Files.write(dir.resolve(name + ".txt"), destination.items(ITEMS_PAUSED));
    long wallOffsetMicros = System.currentTimeMillis() * 1000 - System.nanoTime() / 1000;
    Process run =
        Cli.spawn(
            Map.of(),
            dir.resolve(name + ".out"),
            dir.resolve(name + ".err"),
            fetchArgs(
                name,
                name,
                input,
                "FLEET",
                "--processes",
                "3",
                "--threads",
                "6",
                "--concurrency",
                "6",
                "--max-retry-after",
                "2"));
    List<Long> pauses = new ArrayList<>();
    // The first request follows a reservation, which made the cursor table if it was missing.
    destination.awaitArrivals(1);
    try (Connection c = TestDatabase.connect();
        PreparedStatement pausedUntil =
            c.prepareStatement(
                "SELECT (extract(epoch FROM paused_until) * 1000000)::bigint FROM pacer_cursor"
                    + " WHERE name = ? AND paused_until IS NOT NULL")) {
      pausedUntil.setString(1, name);
      long deadline = System.nanoTime() + 90 * SECOND;
      while (run.isAlive() && System.nanoTime() < deadline) {
        notePause(pauses, pausedUntil);
        Thread.sleep(20);
      }
      notePause(pauses, pausedUntil);
    } finally {
      run.descendants().forEach(ProcessHandle::destroyForcibly);
      run.destroyForcibly();
    }
    boolean finished = run.waitFor(10, TimeUnit.SECONDS) && run.exitValue() == 0;
    String err = Files.readString(dir.resolve(name + ".err"));
    List<TestDestination.Arrival> arrivals = destination.arrivals();

    for (int status : List.of(429, 503)) {
      int nth = status == 429 ? 0 : 1;
      long answered = answerAt(arrivals, status);
      assertThat(pauses)
          .as("the pauses the cursor row recorded (µs since the epoch)")
          .hasSizeGreaterThan(nth);
      long pauseEnds = (pauses.get(nth) - wallOffsetMicros) * 1000;
      long recordedAt = pauseEnds - cap;
      OptionalLong resumed =
          arrivals.stream()
              .mapToLong(TestDestination.Arrival::nanos)
              .filter(t -> t > recordedAt + ON_THE_WIRE)
              .min();
      long resumedAt = resumed.orElse(recordedAt);
      Set<String> before = workers(arrivals, Long.MIN_VALUE, answered);
      Set<String> after = workers(arrivals, resumedAt, Long.MAX_VALUE);
      System.out.printf(
          "retry-after 86400 on a %d, capped at 2 s: %s; the row's pause ends %.3f"
              + " s after the answer arrived (recorded %.3f s after it); %d requests in the pause"
              + " (beyond %d ms on the wire); first request %.3f s after the record; workers"
              + " sending before the answer %s, after the pause %s%n",
          status,
          TestDestination.timeline(arrivals),
          (pauseEnds - answered) / 1e9,
          (recordedAt - answered) / 1e9,
          count(arrivals, recordedAt + ON_THE_WIRE, pauseEnds),
          ON_THE_WIRE / 1_000_000,
          (resumedAt - recordedAt) / 1e9,
          before,
          after);

      assertThat((pauseEnds - answered) / 1e9)
          .as("after the %d: where the cursor row's pause" + " ends, s after the answer", status)
          .isBetween(cap / 1e9, cap / 1e9 + 1);
      assertThat(count(arrivals, recordedAt + ON_THE_WIRE, pauseEnds))
          .as("requests in the %d's capped pause: %s", status, TestDestination.describe(arrivals))
          .isZero();
      assertThat((resumed.orElseThrow() - recordedAt) / 1e9)
          .as("after the %d: the fleet resumed when the capped pause ended", status)
          .isBetween(cap / 1e9, cap / 1e9 + 0.5);
      assertThat(before)
          .as("processes fetching before the %d that fetched after its pause", status)
          .filteredOn(after::contains)
          .hasSizeGreaterThanOrEqualTo(2);
    }
    assertThat(pauses).as("the pauses the cursor row recorded").hasSize(2);
    assertThat(finished).as("the run finished within 90 s, exit 0: %s", err).isTrue();
    assertThat(arrivals.stream().map(TestDestination.Arrival::path).distinct())
        .as("every item fetched")
        .hasSize(ITEMS_PAUSED);
  }

  /** The workers the destination has heard from. */
  private long workersSeen() {
    return destination.arrivals().stream().map(TestDestination.Arrival::worker).distinct().count();
  }

  /**
   * Reads where the cursor row says its last pause ends (µs since the epoch) and adds it to {@code
   * pauses} if it is not the one seen last; nothing while there is no row or no pause.
   */
  private static void notePause(List<Long> pauses, PreparedStatement pausedUntil) throws Exception {
    try (ResultSet r = pausedUntil.executeQuery()) {
      if (r.next() && (pauses.isEmpty() || pauses.get(pauses.size() - 1) != r.getLong(1))) {
        pauses.add(r.getLong(1));
      }
    }
  }

  /** The workers (X-Pacer-Worker) that sent requests arriving in {@code [from, to)}. */
  private static Set<String> workers(List<TestDestination.Arrival> arrivals, long from, long to) {
    return arrivals.stream()
        .filter(a -> a.nanos() >= from && a.nanos() < to)
        .map(TestDestination.Arrival::worker)
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /**
   * Under FLEET every turn is spaced twice as wide after the 429: three processes taking turns in a
   * cycle of 6 gaps instead of 3, the two that did not hear it go at half their rate (ratio 0.5).
   */
  @Test
  void fleetBackoffHalvesTheRateOfTheProcessesThatDidNotHearThe429() throws Exception {
    double ratio = othersRateAfterA429("FLEET");
    assertThat(ratio).as("the other processes' rate after / before").isBetween(0.35, 0.65);
  }

  /**
   * The twin: under PROCESS only the process that heard it asks for double gaps; a cycle is 4 gaps,
   * and the other two keep 2 turns in 4 instead of 2 in 3 (ratio 0.75): the bound above fails.
   */
  @Test
  void processBackoffDoesNotHalveTheOthers() throws Exception {
    double ratio = othersRateAfterA429("PROCESS");
    assertThat(ratio).as("the other processes' rate after / before").isGreaterThan(0.65);
  }

  /**
   * 3 worker JVMs x 3 threads at 12/s; /item/50 is answered 429 once, without Retry-After. The
   * processes that did not hear it: their rate in the 4 s from 0.5 s after the 429, over their rate
   * in the 3 s before it.
   */
  private double othersRateAfterA429(String scope) throws Exception {
    String name = "backoff-" + scope.toLowerCase() + "-" + ProcessHandle.current().pid();
    int rate = 12;
    destination.answering((path, attempt) -> path.equals("/item/50") && attempt == 1 ? 429 : 200);
    Path input = Files.write(dir.resolve(name + ".txt"), destination.items(110));
    List<String> args =
        new ArrayList<>(
            List.of(
                fetchArgs(
                    name,
                    name,
                    input,
                    "FLEET",
                    "--processes",
                    "3",
                    "--threads",
                    "3",
                    "--concurrency",
                    "3",
                    "--backoff-scope",
                    scope)));
    args.set(args.indexOf("--rate") + 1, Integer.toString(rate));
    Cli.Result run = Cli.run(args.toArray(String[]::new));
    assertThat(run.code()).as(run.err()).isZero();
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    TestDestination.Arrival answer =
        arrivals.stream().filter(a -> a.status() == 429).findFirst().orElseThrow();
    long t = answer.nanos();
    List<TestDestination.Arrival> others =
        arrivals.stream().filter(a -> !a.worker().equals(answer.worker())).toList();
    double before = count(others, t - 3 * SECOND, t - SECOND / 5) / 2.8;
    double after = count(others, t + SECOND / 2, t + 9 * SECOND / 2) / 4.0;
    System.out.printf(
        "backoff %s: %s; the other processes %.2f/s before the 429, %.2f/s after"
            + " (ratio %.2f); the whole fleet %.2f/s after%n",
        scope,
        TestDestination.timeline(arrivals),
        before,
        after,
        after / before,
        count(arrivals, t + SECOND / 2, t + 9 * SECOND / 2) / 4.0);
    FleetBounds.at(rate, "backoff " + scope + ", the fleet")
        .assertHeld(TestDestination.timeline(arrivals));
    return after / before;
  }

  @Test
  void aLockoutInOneJobStopsAnotherJobOnTheSameDestination() throws Exception {
    String name = "lockout-" + ProcessHandle.current().pid();
    List<TestDestination.Arrival> arrivals = lockoutRun(name, "FLEET");
    long answered = answerAt(arrivals, 403);
    assertThat(arrivals.stream().filter(a -> a.nanos() > answered + ON_THE_WIRE).toList())
        .as("requests after the 403, either job")
        .isEmpty();

    Path later = Files.write(dir.resolve("later.txt"), destination.items("/c/", 5));
    Cli.Result refused = Cli.run(fetchArgs(name + "-c", name, later, "FLEET"));
    assertThat(refused.code()).as(refused.err()).isEqualTo(Main.EXIT_HALTED);
    assertThat(refused.err()).contains("is locked out", "pacer trips ack");
    assertThat(destination.arrivals()).as("the refused run sent nothing").hasSize(arrivals.size());
    Cli.Result status = Cli.run("status", "--db", TestDatabase.jdbcUrl());
    assertThat(status.out())
        .contains(name, "LOCKED OUT: HTTP 403 from " + destination.url("/a/25"));

    Cli.Result ack =
        Cli.run(
            "trips",
            "ack",
            "--destination",
            name,
            "--note",
            "asked the host",
            "--db",
            TestDatabase.jdbcUrl());
    assertThat(ack.code()).as(ack.err()).isZero();
    Cli.Result after = Cli.run(fetchArgs(name + "-c", name, later, "FLEET"));
    assertThat(after.code()).as(after.err()).isZero();
    assertThat(after.number("done")).isEqualTo(5);
  }

  @Test
  void perProcessPacingLetsAnotherJobGoOnAfterALockout() throws Exception {
    String name = "lockout-per-process-" + ProcessHandle.current().pid();
    List<TestDestination.Arrival> arrivals = lockoutRun(name, "PER_PROCESS");
    long answered = answerAt(arrivals, 403);
    assertThat(
            arrivals.stream()
                .filter(a -> a.nanos() > answered + ON_THE_WIRE && a.path().startsWith("/b/"))
                .count())
        .as("job b kept sending")
        .isGreaterThan(0);
  }

  /**
   * Job b (one worker JVM x 3 threads, 160 items), then, once b is fetching, job a (2 worker JVMs x
   * 3 threads, 80 items), on one destination; a's 25th item is answered 403.
   */
  private List<TestDestination.Arrival> lockoutRun(String name, String pacing) throws Exception {
    destination.answering((path, attempt) -> path.equals("/a/25") ? 403 : 200);
    Path a = Files.write(dir.resolve("a.txt"), destination.items("/a/", 80));
    // Twice a's items: b must still be fetching when a's 25th answer comes, however late a's cold
    // JVMs start on a busy machine (b fetches alone until then).
    Path b = Files.write(dir.resolve("b.txt"), destination.items("/b/", 160));
    Process jobB =
        Cli.spawn(
            Map.of(),
            dir.resolve("b.out"),
            dir.resolve("b.err"),
            fetchArgs(
                name + "-b",
                name,
                b,
                pacing,
                "--processes",
                "1",
                "--threads",
                "3",
                "--concurrency",
                "3"));
    long deadline = System.nanoTime() + 60 * SECOND;
    while (destination.arrivals().isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    Process jobA =
        Cli.spawn(
            Map.of(),
            dir.resolve("a.out"),
            dir.resolve("a.err"),
            fetchArgs(
                name + "-a",
                name,
                a,
                pacing,
                "--processes",
                "2",
                "--threads",
                "3",
                "--concurrency",
                "3"));
    assertThat(jobA.waitFor(120, TimeUnit.SECONDS)).as("job a finished").isTrue();
    assertThat(jobB.waitFor(120, TimeUnit.SECONDS)).as("job b finished").isTrue();
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    long answered = answerAt(arrivals, 403);
    long bBefore =
        arrivals.stream().filter(x -> x.nanos() < answered && x.path().startsWith("/b/")).count();
    System.out.printf(
        "lockout %s: job a exit %d, job b exit %d; job b sent %d before the 403;"
            + " after it (beyond %d ms on the wire): %d from a, %d from b%n",
        pacing,
        jobA.exitValue(),
        jobB.exitValue(),
        bBefore,
        ON_THE_WIRE / 1_000_000,
        arrivals.stream()
            .filter(x -> x.nanos() > answered + ON_THE_WIRE && x.path().startsWith("/a/"))
            .count(),
        arrivals.stream()
            .filter(x -> x.nanos() > answered + ON_THE_WIRE && x.path().startsWith("/b/"))
            .count());
    assertThat(bBefore).as("job b was fetching when the 403 came").isGreaterThan(0);
    if (pacing.equals("FLEET")) {
      assertThat(jobA.exitValue())
          .as(Files.readString(dir.resolve("a.err")))
          .isEqualTo(Main.EXIT_HALTED);
      assertThat(jobB.exitValue())
          .as(Files.readString(dir.resolve("b.err")))
          .isEqualTo(Main.EXIT_HALTED);
    }
    return arrivals;
  }

  private static long answerAt(List<TestDestination.Arrival> arrivals, int status) {
    return arrivals.stream()
        .filter(a -> a.status() == status)
        .mapToLong(TestDestination.Arrival::nanos)
        .min()
        .orElseThrow(() -> new AssertionError("no " + status + " was answered"));
  }

  private static long firstAfter(List<TestDestination.Arrival> arrivals, long from) {
    return arrivals.stream()
        .mapToLong(TestDestination.Arrival::nanos)
        .filter(t -> t > from)
        .min()
        .orElseThrow(() -> new AssertionError("nothing arrived after the answer"));
  }

  private static long count(List<TestDestination.Arrival> arrivals, long from, long to) {
    return arrivals.stream().filter(a -> a.nanos() > from && a.nanos() < to).count();
  }
}
