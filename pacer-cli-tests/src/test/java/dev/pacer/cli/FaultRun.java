package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.RetryGrid;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A real conveyor run to inject a fault under (three worker JVMs x six threads, a 10/s fleet
 * ceiling) against a destination that records every arrival, and what the fault tests judge it by:
 * every item done exactly once, the arrivals in a window, the workers seen, and where the outage
 * policy's retry grid puts the end of the hand-over after a return.
 */
final class FaultRun implements AutoCloseable {

  static final int RATE = 10;
  static final int PROCESSES = 3;
  static final int THREADS = 6;
  static final long SECOND = 1_000_000_000L;

  /** As the run derives it: the most processes that may fetch at once, plus one. */
  static final int DIVISOR = PROCESSES + 1;

  /** Time a stop of the server may take to refuse the last reservation after it is read. */
  static final long CRASH_NANOS = 200_000_000L;

  /**
   * How long after every worker has fetched the run's steady part begins: while the worker JVMs
   * start, and for a moment after, the host is too busy for the fleet to ask without pause.
   */
  static final long START_NANOS = SECOND;

  private final Path dir;
  private final TestDestination destination;
  private final String directUrl;
  private final List<Process> started = new ArrayList<>();

  /** Epoch nanoseconds less {@link System#nanoTime()}: places the test's instants on the grid. */
  private final long wallOffset = System.currentTimeMillis() * 1_000_000L - System.nanoTime();

  /**
   * A run in {@code dir} against {@code destination}, whose work state is read back from the
   * database at {@code directUrl} (the server itself, not the way the run reaches it).
   */
  FaultRun(Path dir, TestDestination destination, String directUrl) {
    this.dir = dir;
    this.destination = destination;
    this.directUrl = directUrl;
  }

  /**
   * Starts {@code pacer fetch --processes 3} of {@code items} URLs through {@code dbUrl}, with
   * {@code options} added to its command line.
   */
  Process fetch(String job, int items, String dbUrl, String... options) throws IOException {
    Path input = Files.write(dir.resolve(job + ".txt"), destination.items(items));
    List<String> args =
        new ArrayList<>(
            List.of(
                "fetch",
                input.toString(),
                "--job",
                job,
                "--destination",
                job,
                "--db",
                dbUrl,
                "--processes",
                String.valueOf(PROCESSES),
                "--threads",
                String.valueOf(THREADS),
                "--concurrency",
                String.valueOf(THREADS),
                "--rate",
                String.valueOf(RATE),
                "--out",
                dir.resolve("out").toString(),
                "--max-load",
                "1000",
                "--no-progress",
                // An item whose last state change was lost in the fault waits for its lease to
                // expire
                // before another worker takes it; a short lease keeps the test short.
                "--lease-seconds",
                "20"));
    args.addAll(List.of(options));
    Process run =
        Cli.spawn(
            Map.of(),
            dir.resolve(job + ".out"),
            dir.resolve(job + ".err"),
            args.toArray(String[]::new));
    started.add(run);
    return run;
  }

  /**
   * The longest from the database's last answer until every worker paces locally, dividing the
   * ceiling by {@code divisor}: each thread holds a turn on the shared cursor, so its end lies at
   * most one turn per thread of the fleet ahead, and a worker's first local turn waits for the
   * turns the others may still hold queued after it, {@code (divisor - 1) x threads} more ({@code
   * DestinationLimiter}'s degraded pacing). From then on each worker's arrivals are its local grid
   * alone.
   */
  static double secondsToLocalPacing(int divisor) {
    return (PROCESSES * THREADS + (divisor - 1) * THREADS) / (double) RATE;
  }

  /**
   * Waits for the run to end and asserts that it exited 0 with every item done, each recorded done
   * exactly once and each URL fetched; answers the run's stderr.
   */
  String finish(Process run, String job, int items) throws Exception {
    assertThat(run.waitFor(180, TimeUnit.SECONDS)).as("the run finished").isTrue();
    String err = Files.readString(dir.resolve(job + ".err"));
    err.lines()
        .filter(l -> l.contains("WARN") || l.contains("ERROR") || l.contains("INFO"))
        .forEach(l -> System.out.println(job + " | " + l));
    assertThat(run.exitValue()).as(err).isZero();
    String[] out = Files.readString(dir.resolve(job + ".out")).strip().split("\n");
    assertThat(out[out.length - 1]).contains("\"done\":" + items, "\"pending\":0", "\"failed\":0");
    assertThat(doneRows(job)).as("each item recorded done exactly once").isEqualTo(items);
    Set<String> fetched = new HashSet<>();
    destination.arrivals().forEach(a -> fetched.add(a.path()));
    assertThat(fetched).as("no item lost").hasSize(items);
    return err;
  }

  void awaitArrivals(int n) throws InterruptedException {
    destination.awaitArrivals(n);
  }

  /** Waits until each of the three workers has fetched, so that a fault finds all of them busy. */
  void awaitEveryWorker() throws InterruptedException {
    long deadline = System.nanoTime() + 90 * SECOND;
    while (workers(0, Long.MAX_VALUE).size() < 3) {
      assertThat(System.nanoTime()).as("three workers fetching within 90 s").isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  /**
   * Where the hand-over after a return at {@code up} (a {@link System#nanoTime()} instant) ends:
   * every process is back on the first 5-s boundary after the return, and paces locally as well
   * until one cooldown after the next.
   */
  long handOverEnds(long up) {
    return RetryGrid.handOverEnds(up + wallOffset) - wallOffset;
  }

  /** How many 5-s retry boundaries lie in ({@code from}, {@code to}], both nanoTime instants. */
  long boundariesBetween(long from, long to) {
    return RetryGrid.boundariesBetween(from + wallOffset, to + wallOffset);
  }

  /**
   * Asserts that the run had items left to fetch until 4 s after the hand-over that followed a
   * return at {@code up}: the part of it judged at the full rate, from 1 s after the hand-over, is
   * then at least 3 s of a fleet that asks without pause.
   */
  void assertItemsLeftAfterHandOver(List<TestDestination.Arrival> arrivals, long up) {
    long handOverEnds = handOverEnds(up);
    // A fetch again (a lease lost in the outage) says nothing of the items left: first fetches do.
    Map<String, Long> firstFetches = new HashMap<>();
    arrivals.forEach(a -> firstFetches.merge(a.path(), a.nanos(), Math::min));
    long lastFirstFetch =
        firstFetches.values().stream().mapToLong(Long::longValue).max().orElse(up);
    assertThat(lastFirstFetch)
        .as(
            "items left to fetch until 4 s after the hand-over, %.1f s"
                + " after the return: the run needs more items",
            (handOverEnds + 4 * SECOND - up) / 1e9)
        .isGreaterThanOrEqualTo(handOverEnds + 4 * SECOND - SECOND / RATE);
  }

  /**
   * Asserts that the fleet fetched at the full rate, at least 9/s, from 1 s after the hand-over
   * that followed a return at {@code up} to 4 s after it.
   */
  void assertFullRateAfterHandOver(List<TestDestination.Arrival> arrivals, long up) {
    assertItemsLeftAfterHandOver(arrivals, up);
    long handOverEnds = handOverEnds(up);
    int recovered =
        TestDestination.count(arrivals, handOverEnds + SECOND, handOverEnds + 4 * SECOND);
    System.out.printf(
        "%d requests in [hand-over end + 1 s, + 4 s], the hand-over ending %.1f s"
            + " after the return%n",
        recovered, (handOverEnds - up) / 1e9);
    assertThat(recovered / 3.0)
        .as(
            "full rate after the hand-over: %d in [+1 s, +4 s]; per second"
                + " from the return: %s",
            recovered, TestDestination.perSecond(arrivals, up))
        .isGreaterThanOrEqualTo(9.0);
  }

  /** The arrivals of each worker in [{@code from}, {@code to}), by its pid. */
  static Map<String, Timeline> byWorker(
      List<TestDestination.Arrival> arrivals, long from, long to) {
    Map<String, List<Long>> instants = new TreeMap<>();
    for (TestDestination.Arrival a : arrivals) {
      if (a.nanos() >= from && a.nanos() < to) {
        instants.computeIfAbsent(a.worker(), w -> new ArrayList<>()).add(a.nanos());
      }
    }
    Map<String, Timeline> members = new TreeMap<>();
    instants.forEach((w, t) -> members.put(w, new Timeline(t)));
    return members;
  }

  /** The workers that fetched in [from, to). */
  Set<String> workers(long from, long to) {
    Set<String> pids = new HashSet<>();
    for (TestDestination.Arrival a : destination.arrivals()) {
      if (a.nanos() >= from && a.nanos() < to) {
        pids.add(a.worker());
      }
    }
    return pids;
  }

  private long doneRows(String job) throws SQLException {
    try (Connection c = DriverManager.getConnection(directUrl);
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*) FROM pacer_item WHERE job = ?"
                    + " AND state = 'done' AND finished_at IS NOT NULL")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }

  /**
   * The requests of {@code job} as the request log has them, in the order sent: seconds from the
   * first, the worker, and how late each was handed to the network after its turn began, in ms. The
   * log keeps them through an outage, so a window too full at the door can be told apart: a turn
   * too many, or a request that left on time and arrived late.
   */
  String sent(String job) throws SQLException {
    StringBuilder out = new StringBuilder();
    try (Connection c = DriverManager.getConnection(directUrl);
        PreparedStatement s =
            c.prepareStatement(
                "SELECT extract(epoch FROM sent_at - min(sent_at) OVER ()), worker, lateness_us"
                    + " FROM pacer_request WHERE job = ? ORDER BY sent_at")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          out.append(
              String.format(
                  Locale.ROOT,
                  "%.3f:%s:%.1f ",
                  r.getDouble(1),
                  r.getString(2),
                  r.getLong(3) / 1000.0));
        }
      }
    }
    return out.toString().strip();
  }

  /** Runs {@code statement} on the database directly, beside the run. */
  void sql(String statement) throws SQLException {
    try (Connection c = DriverManager.getConnection(directUrl);
        Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  /** Ends every run still going (a test that failed before it ended), with its workers. */
  @Override
  public void close() {
    for (Process run : started) {
      run.descendants().forEach(ProcessHandle::destroyForcibly);
      run.destroyForcibly();
    }
  }
}
