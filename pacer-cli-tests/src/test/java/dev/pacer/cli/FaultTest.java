package dev.pacer.cli;

import static dev.pacer.cli.TestDestination.count;
import static dev.pacer.cli.TestDestination.longestGap;
import static dev.pacer.cli.TestDestination.perSecond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.postgres.TcpProxy;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults injected under a real conveyor run (three worker JVMs x six threads, a 10/s fleet ceiling)
 * against a destination that records every arrival, with PostgreSQL behind a TCP proxy that counts
 * connection attempts and can turn into a black hole. In every run the workers give up few turns as
 * late, as they say at their end ({@link Cli.LateTurns}), paced locally or not.
 */
class FaultTest {

  private static final int RATE = FaultRun.RATE;
  private static final long SECOND = FaultRun.SECOND;

  private static final int DIVISOR = FaultRun.DIVISOR;

  /**
   * The redirects an item in hand makes during the outage, {@code --max-redirects}' most: far more
   * turns than a thread of a worker with the divisor takes in it ({@code 12 s x 2.5/s / 6}), and
   * about as many as one without it takes at the full rate ({@code 12 s x 10/s / 6}).
   */
  private static final int HOPS = 20;

  private static final long CRASH_NANOS = FaultRun.CRASH_NANOS;

  private static final long START_NANOS = FaultRun.START_NANOS;

  /** The arrivals awaited before the crash once every worker fetches: 5 s at the ceiling. */
  private static final int STEADY_BEFORE = 50;

  private static final String TWIN_TABLE = "fault_twin_cache";

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

  private Process fetch(String job, int items, String... options) throws IOException {
    return faults.fetch(job, items, throughTheProxy(), options);
  }

  private String throughTheProxy() {
    return "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres?user=postgres";
  }

  /**
   * PostgreSQL stopped with {@code pg_ctl stop -m immediate} under the run and started again 12 s
   * later. While it is away no item can be claimed, so every item in hand redirects (up to {@link
   * #HOPS} times), and each hop takes a turn of its own: the workers keep asking for turns through
   * the outage, paced locally. At the destination the fleet must hold the ceiling from its first
   * request to its last, at the full rate before the crash and from 1 s after the hand-over that
   * follows the return, and each worker {@code 10/4} once it paces locally: the run's three
   * dispatch slots plus one ({@code --max-dispatches}, by default {@code --processes}).
   *
   * <p>Its twin runs beside it through the same crash, on a destination of its own, with no
   * divisor: {@code --degrade-divisor 1} and the {@code django-cache} cursor layout, which keeps no
   * census of the processes taking turns (a census of three would divide by three). Each of its
   * workers paces at the full rate while the database is away, and must break the bounds the run
   * above holds.
   */
  @Test
  void postgresCrashedAndRestartedMidRun() throws Exception {
    String job = "fault-crash";
    int items = 310;
    String twinJob = "fault-crash-twin";
    int twinItems = 150;
    postgres.execute(TestDatabase.djangoCacheTableDdl(TWIN_TABLE));
    Process run = fetch(job, items, "--max-redirects", String.valueOf(HOPS));
    try (TestDestination twinDestination = new TestDestination();
        FaultRun twin = new FaultRun(dir, twinDestination, postgres.jdbcUrl())) {
      // Straight to the server, not through the proxy, whose connections the run above counts.
      Process twinRun =
          twin.fetch(
              twinJob,
              twinItems,
              postgres.jdbcUrl(),
              "--max-redirects",
              String.valueOf(HOPS),
              "--cursor-layout",
              "django-cache",
              "--cursor-table",
              TWIN_TABLE,
              "--degrade-divisor",
              "1");
      twin.awaitEveryWorker();
      long everyWorkerFetching = awaitSteadyRun();
      Set<String> workersBefore = faults.workers(0, Long.MAX_VALUE);
      long attemptsBefore = proxy.connectionsAccepted();
      destination.redirectingUpTo(HOPS);
      twinDestination.redirectingUpTo(HOPS);
      long down = System.nanoTime();
      postgres.stopImmediately();
      Thread.sleep(12_000);
      long attemptsDuringOutage = proxy.connectionsAccepted() - attemptsBefore;
      long attemptsWindowEnd = System.nanoTime();
      postgres.start();
      long up = System.nanoTime();
      destination.redirectingUpTo(0);
      twinDestination.redirectingUpTo(0);
      String err = faults.finish(run, job, items);
      twin.finish(twinRun, twinJob, twinItems);

      List<TestDestination.Arrival> arrivals = destination.arrivals();
      Timeline whole = TestDestination.timeline(arrivals);
      double outage = (up - down) / 1e9;
      Timeline before = whole.between(everyWorkerFetching + START_NANOS, down);
      long localFrom =
          down + CRASH_NANOS + (long) (FaultRun.secondsToLocalPacing(DIVISOR) * SECOND);
      List<Timeline> local = List.copyOf(FaultRun.byWorker(arrivals, localFrom, up).values());
      long handOverEnds = faults.handOverEnds(up);
      Timeline recovered = whole.between(handOverEnds + SECOND, whole.last() + 1);
      System.out.printf(
          "crash: %s; %.1f s outage; %d connection attempts during it (4 processes);"
              + " %d requests during it; %s before it, %s paced locally by each worker, %s from"
              + " 1 s after the hand-over, which ended %.1f s after the return%n",
          whole,
          outage,
          attemptsDuringOutage,
          count(arrivals, down, up),
          before,
          local,
          recovered,
          (handOverEnds - up) / 1e9);
      System.out.println(
          "crash: requests per second from the outage on: " + perSecond(arrivals, down));
      System.out.printf(
          "crash: %s; outage from %.3f s, return at %.3f s, hand-over ended %.3f s%n",
          TestDestination.describe(arrivals),
          (down - whole.first()) / 1e9,
          (up - whole.first()) / 1e9,
          (handOverEnds - whole.first()) / 1e9);
      System.out.println(
          "crash: sent, from the request log (s from the first:worker:lateness ms): "
              + faults.sent(job));
      Cli.LateTurns late = Cli.LateTurns.in(err);
      System.out.println("crash: " + late);
      FleetBounds bounds = FleetBounds.at(RATE, "crash, the fleet");
      bounds.assertHeld(whole, before);
      // Turns paced locally through the outage are turns too, and late ones are given up alike.
      // Before the delivered bounds: turns given up as late are a reason to deliver less.
      late.assertFew(bounds, FaultRun.PROCESSES, whole);
      bounds.assertDelivered(before);
      FleetBounds paced =
          FleetBounds.at((double) RATE / DIVISOR, "crash, a worker pacing locally")
              .turnsCheckedAt(RATE);
      assertThat(local).as("workers pacing locally").hasSize(FaultRun.PROCESSES);
      local.forEach(paced::assertHeld);
      paced.assertDeliveredByMembers(local);
      faults.assertItemsLeftAfterHandOver(arrivals, up);
      bounds.assertHeld(recovered);
      bounds.assertDelivered(recovered);
      // The orchestrating process and three workers: each the attempt that noticed the outage,
      // then at most one per 5-s boundary.
      assertThat(attemptsDuringOutage)
          .isLessThanOrEqualTo(4 * (faults.boundariesBetween(down, attemptsWindowEnd) + 1));
      assertThat(faults.workers(up, Long.MAX_VALUE))
          .as("no worker exited")
          .isEqualTo(workersBefore)
          .hasSize(FaultRun.PROCESSES);
      assertThat(err).contains("PostgreSQL answers again");

      List<TestDestination.Arrival> twinArrivals = twinDestination.arrivals();
      long twinLocalFrom = down + CRASH_NANOS + (long) (FaultRun.secondsToLocalPacing(1) * SECOND);
      Map<String, Timeline> twinLocal = FaultRun.byWorker(twinArrivals, twinLocalFrom, up);
      System.out.printf(
          "crash twin: %s; %s paced locally by each worker%n",
          TestDestination.timeline(twinArrivals), twinLocal.values());
      FleetBounds.at(RATE, "crash twin without the divisor, the fleet")
          .assertWindowBroke(TestDestination.timeline(twinArrivals).between(twinLocalFrom, up));
      FleetBounds twinPaced =
          FleetBounds.at((double) RATE / DIVISOR, "crash twin, a worker without the divisor")
              .turnsCheckedAt(RATE);
      assertThat(twinLocal).as("twin workers pacing locally").hasSize(FaultRun.PROCESSES);
      twinLocal.values().forEach(twinPaced::assertAggregateBroke);
    }
  }

  /**
   * The database's connections fall silent for 8 s (a black hole at the proxy) under the run: no
   * statement is answered or refused, so each waits out its deadline before its process paces
   * locally. The fleet must hold the ceiling from its first request to its last and fetch the items
   * in hand during the hang, and fetch again soon after the restore.
   *
   * <p>Its twin runs beside it through the same proxy, so the same hang, on a destination of its
   * own with no divisor ({@code --degrade-divisor 1} and the {@code django-cache} layout, as the
   * crash's twin) and its items in hand redirecting through the hang, so that its workers keep
   * asking for turns: each paces at the full rate while the database is silent, and the fleet must
   * break the busiest window the run holds.
   */
  @Test
  void aHungDatabaseNeverHangsTheRun() throws Exception {
    String job = "fault-hung";
    int items = 150;
    String twinJob = "fault-hung-twin";
    int twinItems = 150;
    postgres.execute(TestDatabase.djangoCacheTableDdl(TWIN_TABLE));
    Process run = fetch(job, items);
    try (TestDestination twinDestination = new TestDestination();
        FaultRun twin = new FaultRun(dir, twinDestination, postgres.jdbcUrl())) {
      Process twinRun =
          twin.fetch(
              twinJob,
              twinItems,
              throughTheProxy(),
              "--max-redirects",
              String.valueOf(HOPS),
              "--cursor-layout",
              "django-cache",
              "--cursor-table",
              TWIN_TABLE,
              "--degrade-divisor",
              "1");
      twin.awaitEveryWorker();
      long everyWorkerFetching = awaitSteadyRun();
      twinDestination.redirectingUpTo(HOPS);
      long hung = System.nanoTime();
      proxy.blackhole();
      Thread.sleep(8_000);
      proxy.restore();
      long restored = System.nanoTime();
      twinDestination.redirectingUpTo(0);
      Cli.LateTurns late = Cli.LateTurns.in(faults.finish(run, job, items));
      twin.finish(twinRun, twinJob, twinItems);

      List<TestDestination.Arrival> arrivals = destination.arrivals();
      Timeline fleet = TestDestination.timeline(arrivals);
      int during = count(arrivals, hung, restored);
      long resumed =
          arrivals.stream()
                  .mapToLong(TestDestination.Arrival::nanos)
                  .filter(t -> t >= restored)
                  .min()
                  .orElse(Long.MAX_VALUE)
              - restored;
      Timeline before = fleet.between(everyWorkerFetching + START_NANOS, hung);
      Timeline afterTheRestore = fleet.between(restored, fleet.last() + 1);
      System.out.printf(
          "hung: %s; %d requests during the 8 s hang; fetching resumed %.1f s after"
              + " the restore; %s before it, %s after the restore, per second: %s; %s%n",
          fleet,
          during,
          resumed / 1e9,
          before,
          afterTheRestore,
          perSecond(arrivals, restored),
          late);
      FleetBounds bounds = FleetBounds.at(RATE, "hung, the fleet");
      bounds.assertHeld(fleet, before);
      late.assertFew(bounds, FaultRun.PROCESSES, fleet);
      bounds.assertDelivered(before);
      // After the restore only the upper bound: a worker's work-state read can stay stuck on the
      // silent server past the restore, until its timeout, and that worker's outage then lasts
      // until the retry boundary after it, so no part of the return is known to be steady.
      bounds.assertHeld(afterTheRestore);
      assertThat(during).as("items in hand still fetched, at the degraded rate").isPositive();
      // A probe stuck on the silent server (its connect bound), the next retry boundary (5 s), and
      // a dispatch slot taken again if its lease ran out meanwhile (a poll a second): well under
      // 20 s.
      assertThat(resumed).as("fetching resumed after the restore").isLessThan(20 * SECOND);

      List<TestDestination.Arrival> twinArrivals = twinDestination.arrivals();
      Timeline twinHung = TestDestination.timeline(twinArrivals).between(hung, restored);
      System.out.printf(
          "hung twin: %s; during the hang %s, per second from it: %s%n",
          TestDestination.timeline(twinArrivals), twinHung, perSecond(twinArrivals, hung));
      FleetBounds.at(RATE, "hung twin without the divisor, the fleet").assertWindowBroke(twinHung);
    }
  }

  @Test
  void theCursorRowTruncatedThenPushedAnHourAhead() throws Exception {
    String job = "fault-cursor";
    int items = 200;
    Process run = fetch(job, items);
    long everyWorkerFetching = awaitSteadyRun();
    long truncated = System.nanoTime();
    faults.sql("TRUNCATE pacer_cursor");
    // The turns granted before the truncate, the restart's gap, then 5 s at the ceiling.
    faults.awaitArrivals(
        destination.arrivals().size() + FaultRun.PROCESSES * FaultRun.THREADS + STEADY_BEFORE);
    long pushed = System.nanoTime();
    faults.sql("UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '1 hour'");
    String err = faults.finish(run, job, items);

    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline fleet = TestDestination.timeline(arrivals);
    long stalled = longestGap(arrivals, pushed);
    long restarted = endOfLongestGap(fleet.between(truncated, pushed), truncated);
    long reset = endOfLongestGap(fleet, pushed);
    Timeline beforeTheTruncate = fleet.between(everyWorkerFetching + START_NANOS, truncated);
    Timeline afterTheRestart = fleet.between(restarted + START_NANOS, pushed);
    Timeline afterTheReset = fleet.between(reset + START_NANOS, fleet.last() + 1);
    System.out.println(
        "cursor: around the truncate: "
            + TestDestination.describe(
                arrivals.stream()
                    .filter(
                        a ->
                            a.nanos() >= truncated - 2 * SECOND
                                && a.nanos() < truncated + 3 * SECOND)
                    .toList()));
    System.out.printf(
        "cursor: %s; %d requests in the second after the truncate; the row"
            + " restarted %.2f s after it; longest gap after the hour push %.2f s; %s before the"
            + " truncate, %s from 1 s after the restart, %s from 1 s after the reset; per second"
            + " from the truncate: %s; %s%n",
        fleet,
        count(arrivals, truncated, truncated + SECOND),
        (restarted - truncated) / 1e9,
        stalled / 1e9,
        beforeTheTruncate,
        afterTheRestart,
        afterTheReset,
        perSecond(arrivals, truncated),
        Cli.LateTurns.in(err));
    // A lost row restarts after the turns already granted (not_before: where the process last
    // saw the cursor, plus a bound on the rest of the fleet's pending turns), so the ceiling's own
    // bound holds across the truncation, and the fleet is at the ceiling again once it restarts.
    FleetBounds bounds = FleetBounds.at(RATE, "cursor, the fleet");
    bounds.assertHeld(fleet, beforeTheTruncate);
    Cli.LateTurns.in(err).assertFew(bounds, FaultRun.PROCESSES, fleet);
    bounds.assertDelivered(beforeTheTruncate);
    bounds.assertHeld(afterTheRestart);
    bounds.assertDelivered(afterTheRestart);
    assertThat(stalled)
        .as("the hour-ahead cursor was reset, not waited for")
        .isLessThan(5 * SECOND);
    bounds.assertHeld(afterTheReset);
    bounds.assertDelivered(afterTheReset);
    assertThat(err).contains("ahead of the database clock");
  }

  /**
   * Waits until every worker fetches and then for {@link #STEADY_BEFORE} more arrivals; answers
   * when every worker was seen fetching.
   */
  private long awaitSteadyRun() throws InterruptedException {
    faults.awaitEveryWorker();
    long everyWorkerFetching = System.nanoTime();
    faults.awaitArrivals(destination.arrivals().size() + STEADY_BEFORE);
    return everyWorkerFetching;
  }

  /** The arrival that ends the longest time without one from {@code from} on. */
  private static long endOfLongestGap(Timeline run, long from) {
    long previous = from;
    long longest = -1;
    long end = from;
    for (long t : run.instantsFrom(from)) {
      if (t - previous > longest) {
        longest = t - previous;
        end = t;
      }
      previous = t;
    }
    return end;
  }
}
