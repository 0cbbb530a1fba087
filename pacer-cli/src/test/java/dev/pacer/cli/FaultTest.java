package dev.pacer.cli;

import static dev.pacer.cli.TestDestination.count;
import static dev.pacer.cli.TestDestination.longestGap;
import static dev.pacer.cli.TestDestination.perSecond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.Timeline;
import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.postgres.TcpProxy;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
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

  private static final int RATE = FaultRun.RATE;
  private static final long SECOND = FaultRun.SECOND;

  @TempDir Path dir;
  private RestartablePostgres postgres;
  private TcpProxy proxy;
  private TestDestination destination;
  private FaultRun faults;

  @BeforeEach
  void start() throws IOException {
    postgres = new RestartablePostgres();
    proxy = new TcpProxy(postgres.port());
    destination = new TestDestination();
    faults = new FaultRun(dir, destination, postgres.jdbcUrl());
  }

  @AfterEach
  void stop() throws IOException {
    faults.close();
    destination.close();
    proxy.close();
    postgres.close();
  }

  private Process fetch(String job, int items) throws IOException {
    return faults.fetch(job, items, "jdbc:postgresql://127.0.0.1:" + proxy.port()
        + "/postgres?user=postgres");
  }

  @Test
  void postgresCrashedAndRestartedMidRun() throws Exception {
    String job = "fault-crash";
    int items = 260;
    Process run = fetch(job, items);
    faults.awaitArrivals(50);
    Set<String> workersBefore = faults.workers(0, Long.MAX_VALUE);
    long attemptsBefore = proxy.connectionsAccepted();
    long down = System.nanoTime();
    postgres.stopImmediately();
    Thread.sleep(12_000);
    long attemptsDuringOutage = proxy.connectionsAccepted() - attemptsBefore;
    long attemptsWindowEnd = System.nanoTime();
    postgres.start();
    long up = System.nanoTime();
    String err = faults.finish(run, job, items);

    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline fleet = TestDestination.timeline(arrivals);
    double outage = (up - down) / 1e9;
    System.out.printf("crash: %s; %.1f s outage; %d connection attempts during it (4 processes);"
            + " %d requests during it%n",
        fleet, outage, attemptsDuringOutage, count(arrivals, down, up));
    System.out.println("crash: requests per second from the outage on: " + perSecond(arrivals, down));
    TestDestination.assertBusiestWindowAtMost(arrivals, RATE + 1);
    // The orchestrating process and three workers: each the attempt that noticed the outage, then
    // at most one per 5-s boundary.
    assertThat(attemptsDuringOutage).isLessThanOrEqualTo(
        4 * (faults.boundariesBetween(down, attemptsWindowEnd) + 1));
    faults.assertFullRateAfterHandOver(arrivals, up);
    assertThat(faults.workers(up, Long.MAX_VALUE)).as("no worker exited").isEqualTo(workersBefore).hasSize(3);
    assertThat(err).contains("PostgreSQL answers again");
  }

  @Test
  void aHungDatabaseNeverHangsTheRun() throws Exception {
    String job = "fault-hung";
    int items = 150;
    Process run = fetch(job, items);
    faults.awaitArrivals(40);
    long hung = System.nanoTime();
    proxy.blackhole();
    Thread.sleep(8_000);
    proxy.restore();
    long restored = System.nanoTime();
    faults.finish(run, job, items);

    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline fleet = TestDestination.timeline(arrivals);
    int during = count(arrivals, hung, restored);
    long resumed = arrivals.stream().mapToLong(TestDestination.Arrival::nanos)
        .filter(t -> t >= restored).min().orElse(Long.MAX_VALUE) - restored;
    System.out.printf("hung: %s; %d requests during the 8 s hang; fetching resumed %.1f s after"
        + " the restore%n", fleet, during, resumed / 1e9);
    TestDestination.assertBusiestWindowAtMost(arrivals, RATE + 1);
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
    faults.awaitArrivals(40);
    long truncated = System.nanoTime();
    faults.sql("TRUNCATE pacer_cursor");
    faults.awaitArrivals(90);
    long pushed = System.nanoTime();
    faults.sql("UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '1 hour'");
    String err = faults.finish(run, job, items);

    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline fleet = TestDestination.timeline(arrivals);
    long stalled = longestGap(arrivals, pushed);
    System.out.println("cursor: around the truncate: " + TestDestination.describe(arrivals.stream()
        .filter(a -> a.nanos() >= truncated - 2 * SECOND && a.nanos() < truncated + 3 * SECOND)
        .toList()));
    System.out.printf("cursor: %s; %d requests in the second after the truncate;"
            + " longest gap after the hour push %.2f s%n",
        fleet, count(arrivals, truncated, truncated + SECOND), stalled / 1e9);
    // A lost row restarts after the turns already granted (not_before: where the process last
    // saw the cursor, plus a bound on the rest of the fleet's pending turns), so the ceiling's own
    // bound holds across the truncation.
    TestDestination.assertBusiestWindowAtMost(arrivals, RATE + 1);
    assertThat(stalled).as("the hour-ahead cursor was reset, not waited for").isLessThan(5 * SECOND);
    assertThat(err).contains("ahead of the database clock");
  }
}
