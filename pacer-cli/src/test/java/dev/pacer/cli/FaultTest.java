package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Timeline;
import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.postgres.RetryGrid;
import dev.pacer.postgres.TcpProxy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults injected under a real conveyor run (three worker JVMs x six threads, a 10/s fleet
 * ceiling) against a destination that records every arrival, with PostgreSQL behind a TCP proxy
 * that counts connection attempts and can turn into a black hole.
 */
class FaultTest {

  private static final int RATE = 10;
  private static final long SECOND = 1_000_000_000L;

  @TempDir Path dir;
  private RestartablePostgres postgres;
  private TcpProxy proxy;
  private TestDestination destination;

  @BeforeEach
  void start() throws IOException {
    postgres = new RestartablePostgres();
    proxy = new TcpProxy(postgres.port());
    destination = new TestDestination();
  }

  @AfterEach
  void stop() throws IOException {
    destination.close();
    proxy.close();
    postgres.close();
  }

  private Process fetch(String job, int items) throws IOException {
    Path input = Files.write(dir.resolve(job + ".txt"), destination.items(items));
    return Cli.spawn(Map.of(), dir.resolve(job + ".out"), dir.resolve(job + ".err"),
        "fetch", input.toString(), "--job", job, "--destination", job,
        "--db", "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres?user=postgres",
        "--processes", "3", "--threads", "6", "--concurrency", "6", "--rate", String.valueOf(RATE),
        "--out", dir.resolve("out").toString(), "--max-load", "1000", "--no-progress",
        // An item whose last state change was lost in the crash (unflushed WAL) waits for its
        // lease to expire before another worker takes it; a short lease keeps the test short.
        "--lease-seconds", "20");
  }

  private String finish(Process run, String job, int items) throws Exception {
    assertThat(run.waitFor(180, TimeUnit.SECONDS)).as("the run finished").isTrue();
    String err = Files.readString(dir.resolve(job + ".err"));
    err.lines().filter(l -> l.contains("WARN") || l.contains("ERROR") || l.contains("INFO dev.pacer"))
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

  @Test
  void postgresCrashedAndRestartedMidRun() throws Exception {
    String job = "fault-crash";
    int items = 260;
    long wallOffset = System.currentTimeMillis() * 1_000_000L - System.nanoTime();
    Process run = fetch(job, items);
    destination.awaitArrivals(50);
    Set<String> workersBefore = workers(0, Long.MAX_VALUE);
    long attemptsBefore = proxy.connectionsAccepted();
    long down = System.nanoTime();
    postgres.stopImmediately();
    Thread.sleep(12_000);
    long attemptsDuringOutage = proxy.connectionsAccepted() - attemptsBefore;
    long attemptsWindowEnd = System.nanoTime();
    postgres.start();
    long up = System.nanoTime();
    String err = finish(run, job, items);

    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline fleet = TestDestination.timeline(arrivals);
    double outage = (up - down) / 1e9;
    long handOverEnds = RetryGrid.handOverEnds(up + wallOffset) - wallOffset;
    int recovered =
        TestDestination.count(arrivals, handOverEnds + SECOND, handOverEnds + 4 * SECOND);
    System.out.printf("crash: %s; %.1f s outage; %d connection attempts during it (4 processes);"
            + " %d requests during it; %d in [hand-over end + 1 s, + 4 s]%n",
        fleet, outage, attemptsDuringOutage, TestDestination.count(arrivals, down, up), recovered);
    System.out.println("crash: requests per second from the outage on: "
        + TestDestination.perSecond(arrivals, down));
    assertThat(fleet.peakOneSecondWindow()).as(TestDestination.describe(arrivals))
        .isLessThanOrEqualTo(RATE + 1);
    // The orchestrating process and three workers: each the attempt that noticed the outage, then
    // at most one per 5-s boundary.
    assertThat(attemptsDuringOutage).isLessThanOrEqualTo(
        4 * (RetryGrid.boundariesBetween(down + wallOffset, attemptsWindowEnd + wallOffset) + 1));
    assertThat(recovered / 3.0).as("full rate after the hand-over").isGreaterThanOrEqualTo(9.0);
    assertThat(workers(up, Long.MAX_VALUE)).as("no worker exited").isEqualTo(workersBefore).hasSize(3);
    assertThat(err).contains("PostgreSQL answers again");
  }

  @Test
  void aHungDatabaseNeverHangsTheRun() throws Exception {
    String job = "fault-hung";
    int items = 150;
    Process run = fetch(job, items);
    destination.awaitArrivals(40);
    long hung = System.nanoTime();
    proxy.blackhole();
    Thread.sleep(8_000);
    proxy.restore();
    long restored = System.nanoTime();
    finish(run, job, items);

    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline fleet = TestDestination.timeline(arrivals);
    int during = TestDestination.count(arrivals, hung, restored);
    long resumed = arrivals.stream().mapToLong(TestDestination.Arrival::nanos)
        .filter(t -> t >= restored).min().orElse(Long.MAX_VALUE) - restored;
    System.out.printf("hung: %s; %d requests during the 8 s hang; fetching resumed %.1f s after"
        + " the restore%n", fleet, during, resumed / 1e9);
    assertThat(fleet.peakOneSecondWindow()).as(TestDestination.describe(arrivals))
        .isLessThanOrEqualTo(RATE + 1);
    assertThat(during).as("items in hand still fetched, at the degraded rate").isPositive();
    // A probe stuck on the silent server (its connect bound), the next retry boundary (5 s), and
    // a dispatch slot taken again if its lease ran out meanwhile (a poll a second): well under 20 s.
    assertThat(resumed).as("fetching resumed after the restore").isLessThan(20 * SECOND);
  }

  @Test
  void theCursorRowTruncatedThenPushedAnHourAhead() throws Exception {
    String job = "fault-cursor";
    int items = 150;
    Process run = fetch(job, items);
    destination.awaitArrivals(40);
    long truncated = System.nanoTime();
    sql("TRUNCATE pacer_cursor");
    destination.awaitArrivals(90);
    long pushed = System.nanoTime();
    sql("UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '1 hour'");
    String err = finish(run, job, items);

    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline fleet = TestDestination.timeline(arrivals);
    long stalled = TestDestination.longestGap(arrivals, pushed);
    System.out.println("cursor: around the truncate: " + TestDestination.describe(arrivals.stream()
        .filter(a -> a.nanos() >= truncated - 2 * SECOND && a.nanos() < truncated + 3 * SECOND)
        .toList()));
    System.out.printf("cursor: %s; %d requests in the second after the truncate;"
            + " longest gap after the hour push %.2f s%n",
        fleet, TestDestination.count(arrivals, truncated, truncated + SECOND), stalled / 1e9);
    // A lost row restarts after the turns already granted (not_before: where the process last
    // saw the cursor, plus a bound on the rest of the fleet's pending turns), so the ceiling's own
    // bound holds across the truncation.
    assertThat(fleet.peakOneSecondWindow()).as(TestDestination.describe(arrivals))
        .isLessThanOrEqualTo(RATE + 1);
    assertThat(stalled).as("the hour-ahead cursor was reset, not waited for").isLessThan(5 * SECOND);
    assertThat(err).contains("ahead of the database clock");
  }

  private Set<String> workers(long from, long to) {
    Set<String> pids = new HashSet<>();
    for (TestDestination.Arrival a : destination.arrivals()) {
      if (a.nanos() >= from && a.nanos() < to) {
        pids.add(a.worker());
      }
    }
    return pids;
  }

  private long doneRows(String job) throws SQLException {
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT count(*) FROM pacer_item WHERE job = '" + job
            + "' AND state = 'done' AND finished_at IS NOT NULL")) {
      r.next();
      return r.getLong(1);
    }
  }

  private void sql(String statement) throws SQLException {
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
