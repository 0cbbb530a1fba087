package dev.pacer.cli;

import static dev.pacer.cli.TestDestination.count;
import static dev.pacer.cli.TestDestination.perSecond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The main job goes on through a PostgreSQL outage: each worker fetches the items it leased ahead
 * ({@code --outage-buffer}) at the divided rate while PostgreSQL is away, and records their
 * outcomes on its return. Judged at the destination, on a real conveyor run ({@link FaultRun}:
 * three worker JVMs x six threads, a 10/s ceiling) with PostgreSQL stopped for 12 s mid-run, as
 * {@code pg_ctl stop} stops it (a fast shutdown, which keeps every commit), or crashed (an
 * immediate shutdown, which forgets the work state's last asynchronous commits: {@code
 * StoreConnection}'s commit mode).
 */
class OutageBufferTest {

  private static final int RATE = FaultRun.RATE;
  private static final long SECOND = FaultRun.SECOND;

  private static final int DIVISOR = FaultRun.DIVISOR;

  /** How long PostgreSQL is away. */
  private static final long OUTAGE_MILLIS = 12_000;

  private static final long CRASH_NANOS = FaultRun.CRASH_NANOS;

  private static final long START_NANOS = FaultRun.START_NANOS;

  /**
   * The arrivals awaited before the crash once every worker fetches: 8 s at the ceiling, over which
   * each worker's buffer fills (two items ahead per claim, up to 50: 20 s at 10/4 per second).
   */
  private static final int STEADY_BEFORE = 80;

  /** The share of the divided rate the fleet must keep up through the outage. */
  private static final double KEPT_UP = 0.8;

  /** How much longer than its items at the ceiling plus the outage the run may take. */
  private static final double LONGEST_RUN = 1.2;

  @TempDir Path dir;
  private RestartablePostgres postgres;
  private TestDestination destination;
  private FaultRun faults;

  @BeforeEach
  void start() throws IOException {
    postgres = new RestartablePostgres();
    destination = new TestDestination();
    faults = new FaultRun(dir, destination, postgres.jdbcUrl());
  }

  @AfterEach
  void stop() throws IOException {
    faults.close();
    destination.close();
    postgres.close();
  }

  /** How the test stops PostgreSQL under the run. */
  @FunctionalInterface
  private interface Stop {
    void stop() throws Exception;
  }

  /**
   * PostgreSQL stopped for 12 s under the run, as {@code pg_ctl stop} stops it. Every worker goes
   * on fetching its buffer, so at the destination the fleet delivers at least 0.8 x its divided
   * rate ({@code 3 x 10/4}) over the outage, and each worker {@code 10/4} once it paces locally,
   * while the fleet holds the ceiling from its first request to its last; the run ends within 1.2 x
   * (items / rate + outage), and no URL arrives twice.
   *
   * <p>Its twin runs beside it through the same outage, on a destination of its own, with {@code
   * --outage-buffer 0}: no item leased ahead, so once its threads have fetched the items in hand it
   * fetches nothing until PostgreSQL is back, and must break the lower bound the run holds.
   */
  @Test
  void theJobGoesOnThroughAnOutage() throws Exception {
    goesOnThrough("outage", postgres::stopFast);
  }

  /**
   * The same, PostgreSQL crashed ({@code pg_ctl stop -m immediate}: no checkpoint) and started
   * again 12 s later: the server forgets the work state's last asynchronous commits, claims and
   * records both, and still no URL arrives twice. The workers record again the outcomes they
   * recorded last and take back the leases of the items they hold, and no worker claims an item
   * before every worker seen before the restart has done so ({@code ItemStore}'s class comment).
   */
  @Test
  void theJobGoesOnThroughACrash() throws Exception {
    goesOnThrough("crash", postgres::stopImmediately);
  }

  private void goesOnThrough(String job, Stop stop) throws Exception {
    int items = 300;
    String twinJob = job + "-twin";
    int twinItems = 200;
    Process run = faults.fetch(job, items, postgres.jdbcUrl());
    try (TestDestination twinDestination = new TestDestination();
        FaultRun twin = new FaultRun(dir, twinDestination, postgres.jdbcUrl())) {
      Process twinRun = twin.fetch(twinJob, twinItems, postgres.jdbcUrl(), "--outage-buffer", "0");
      twin.awaitEveryWorker();
      faults.awaitEveryWorker();
      long everyWorkerFetching = System.nanoTime();
      faults.awaitArrivals(destination.arrivals().size() + STEADY_BEFORE);
      long down = System.nanoTime();
      stop.stop();
      Thread.sleep(OUTAGE_MILLIS);
      postgres.start();
      long up = System.nanoTime();
      String err = faults.finish(run, job, items);
      twin.finish(twinRun, twinJob, twinItems);
      judgeRun(job, items, err, everyWorkerFetching, down, up);
      judgeTwin(job, twinDestination.arrivals(), down, up);
    }
  }

  private void judgeRun(
      String job, int items, String err, long everyWorkerFetching, long down, long up) {
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline whole = TestDestination.timeline(arrivals);
    double outage = (up - down) / 1e9;
    Timeline before = whole.between(everyWorkerFetching + START_NANOS, down);
    int during = count(arrivals, down, up);
    double keptUp = KEPT_UP * FaultRun.PROCESSES * RATE / DIVISOR;
    long localFrom = down + CRASH_NANOS + (long) (FaultRun.secondsToLocalPacing(DIVISOR) * SECOND);
    List<Timeline> local = List.copyOf(FaultRun.byWorker(arrivals, localFrom, up).values());
    double runSeconds = whole.spanSeconds();
    double longest = LONGEST_RUN * ((double) items / RATE + outage);
    System.out.printf(
        "%s: %s; %.1f s outage; %d requests during it (%.2f/s, at least %.2f/s);"
            + " %s before it, %s paced locally by each worker; the run took %.1f s (at most"
            + " %.1f s); per second from the outage on: %s; fetched twice: %s%n",
        job,
        whole,
        outage,
        during,
        during / outage,
        keptUp,
        before,
        local,
        runSeconds,
        longest,
        perSecond(arrivals, down),
        fetchedTwice(arrivals, down));
    Cli.LateTurns late = Cli.LateTurns.in(err);
    System.out.println(job + ": " + late);
    FleetBounds bounds = FleetBounds.at(RATE, job + ", the fleet");
    bounds.assertHeld(whole, before);
    late.assertFew(bounds, FaultRun.PROCESSES, whole);
    bounds.assertDelivered(before);
    assertThat(during / outage)
        .as("the fleet's rate during the outage; per second from it: %s", perSecond(arrivals, down))
        .isGreaterThanOrEqualTo(keptUp);
    FleetBounds paced =
        FleetBounds.at((double) RATE / DIVISOR, job + ", a worker fetching its buffer")
            .turnsCheckedAt(RATE);
    assertThat(local).as("workers fetching their buffers").hasSize(FaultRun.PROCESSES);
    local.forEach(paced::assertHeld);
    paced.assertDeliveredByMembers(local);
    assertThat(arrivals)
        .as("no URL fetched twice: %s", fetchedTwice(arrivals, down))
        .hasSize(items);
    assertThat(runSeconds)
        .as("the run's length, from its first request to its last")
        .isLessThanOrEqualTo(longest);
    assertThat(err).contains("PostgreSQL answers again");
  }

  private static void judgeTwin(
      String job, List<TestDestination.Arrival> twinArrivals, long down, long up) {
    double outage = (up - down) / 1e9;
    double keptUp = KEPT_UP * FaultRun.PROCESSES * RATE / DIVISOR;
    int twinDuring = count(twinArrivals, down, up);
    System.out.printf(
        "%s twin without a buffer: %s; %d requests during the outage (%.2f/s); per second"
            + " from it: %s%n",
        job,
        TestDestination.timeline(twinArrivals),
        twinDuring,
        twinDuring / outage,
        perSecond(twinArrivals, down));
    assertThat(twinDuring / outage)
        .as("the twin's rate during the outage breaks the lower bound")
        .isLessThan(keptUp);
  }

  /**
   * The URLs that arrived more than once, each with its arrivals' instants in seconds from {@code
   * down} and the workers that sent them.
   */
  private static Map<String, List<String>> fetchedTwice(
      List<TestDestination.Arrival> arrivals, long down) {
    Map<String, List<String>> by = new TreeMap<>();
    arrivals.forEach(
        a ->
            by.computeIfAbsent(a.path(), p -> new ArrayList<>())
                .add(String.format("%.2f s by %s", (a.nanos() - down) / 1e9, a.worker())));
    by.values().removeIf(l -> l.size() < 2);
    return by;
  }
}
