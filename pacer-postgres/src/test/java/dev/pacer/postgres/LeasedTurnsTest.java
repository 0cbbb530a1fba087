package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LateTurns;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.jdkhttp.SentRequest;
import dev.pacer.spi.Cursor;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.DoorExtension;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.JvmStalls;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.TurnTrace;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Leases of turns ({@link Destination#maxLeasedTurns()}) at the door: four independent limiters,
 * each on a PostgreSQL cursor of its own and with {@value #THREADS} threads asking without pause,
 * lease blocks of turns and hand them out themselves. At the door the fleet holds {@link
 * FleetBounds} (the busiest 1-s window from the first request, the aggregate and the delivered rate
 * over the steady part until the askers stop, the turns given up as late), no request leaves later
 * after its turn than the late-turn rule allows, and the reservations made per request sent are
 * well below one. Each request is traced from its turn to the door ({@link TurnTrace}): the turns
 * themselves are held to the window and to half a turn's spacing with no excuse.
 *
 * <p>Two twins: the same fleet with leases off makes about a reservation per request, so the
 * statements bound tells leases apart; and the same fleet leasing from a cursor of its own per
 * limiter, as per-process pacers would, must break the window and the aggregate.
 */
class LeasedTurnsTest {

  private static final double RATE = 50;
  private static final int INSTANCES = 4;
  private static final int THREADS = 4;
  private static final int MAX_LEASED = 16;

  /**
   * Covers five asks of a limiter at its share, 12.5/s: leases of about five turns. At 100/s with
   * half the horizon the leases are the same, but a 5-ms late-turn limit is within a saturated
   * 2-core machine's ordinary wake-up latency (docs/operations.md).
   */
  private static final Duration HORIZON = Duration.ofMillis(400);

  private static final long RUN_MILLIS = 5_000;

  /** Reservations per request sent, at most, with leases on. */
  private static final double MOST_STATEMENTS_PER_PERMIT = 0.5;

  @RegisterExtension static final DoorExtension door = new DoorExtension();

  /**
   * What a run left at the door, what its limiters counted, its requests' lateness and their trace
   * from turn to door.
   */
  private record Run(
      List<Arrival> atTheDoor,
      long sent,
      long late,
      long lateInSteady,
      long unused,
      long statements,
      List<Duration> lates,
      TurnTrace trace,
      long askersStopped) {

    Timeline arrivals() {
      return Timeline.of(atTheDoor);
    }

    double statementsPerPermit() {
      return (double) statements / sent;
    }

    Duration latest() {
      return lates.stream().max(Duration::compareTo).orElse(Duration.ZERO);
    }
  }

  @Test
  void leasedTurnsKeepTheCeilingAtTheDoorWithFewStatementsAndNoneSentLate() throws Exception {
    List<PostgresCursor> cursors = new ArrayList<>();
    try {
      Run run = run(MAX_LEASED, databaseCursors(cursors), cursors);
      System.out.printf(
          "leases: at the door %s; sent %d, late %d, leased unused %d, statements %d (%.3f a"
              + " permit), latest send %s%n",
          run.arrivals(),
          run.sent(),
          run.late(),
          run.unused(),
          run.statements(),
          run.statementsPerPermit(),
          run.latest());
      System.out.println("leases: " + run.trace().busiestWindow(run.atTheDoor()));
      FleetBounds bounds = FleetBounds.at(RATE, "four limiters leasing turns", door);
      Timeline steady = RunArrivals.steady(run.arrivals(), run.askersStopped());
      assertThat(run.arrivals().size()).as("requests at the door").isEqualTo(run.sent());
      // Turns given up as late are the busy host's: the delivered rate counts them, and the
      // late-turn bound allows those this JVM's measured stalls may have cost.
      bounds.assertDeliveredBesideGivenUp(steady, RATE, run.lateInSteady());
      bounds.assertFewLateTurnsBesideStalls(
          run.late(),
          run.sent() + run.late(),
          JvmStalls.get()
              .turnsInStallsBetween(
                  run.arrivals().first(),
                  run.arrivals().last(),
                  LateTurns.limit(Duration.ofNanos(Math.round(1e9 / RATE))).toNanos(),
                  RATE));
      assertThat(run.latest())
          .as("the latest request after its turn")
          .isLessThanOrEqualTo(LateTurns.limit(Duration.ofNanos((long) (1e9 / RATE))));
      assertThat(run.statementsPerPermit())
          .as("reservation statements per request sent")
          .isLessThanOrEqualTo(MOST_STATEMENTS_PER_PERMIT);
      // Last, since a window broken by a request held up after its hand-over skips the rest.
      bounds.assertHeld(run.arrivals(), steady, run.trace(), run.atTheDoor());
    } finally {
      cursors.forEach(PostgresCursor::close);
    }
  }

  @Test
  void withoutLeasesEveryRequestCostsAboutAStatement() throws Exception {
    List<PostgresCursor> cursors = new ArrayList<>();
    try {
      Run run = run(1, databaseCursors(cursors), cursors);
      System.out.printf(
          "no leases: at the door %s; sent %d, statements %d (%.3f a permit)%n",
          run.arrivals(), run.sent(), run.statements(), run.statementsPerPermit());
      assertThat(run.statementsPerPermit())
          .as("reservation statements per request sent, without leases")
          .isGreaterThan(MOST_STATEMENTS_PER_PERMIT);
    } finally {
      cursors.forEach(PostgresCursor::close);
    }
  }

  @Test
  void leasingFromACursorPerLimiterBreaksTheCeiling() throws Exception {
    Run run = run(MAX_LEASED, LocalCursor::new, List.of());
    FleetBounds bounds = FleetBounds.at(RATE, "four limiters leasing, a local cursor each", door);
    bounds.assertWindowBroke(run.arrivals());
    bounds.assertAggregateBroke(RunArrivals.steady(run.arrivals(), run.askersStopped()));
  }

  private static Supplier<Cursor> databaseCursors(List<PostgresCursor> opened) {
    return () -> {
      PostgresCursor c = TestDatabase.cursor(TableLayout.pacerTable());
      opened.add(c);
      return c;
    };
  }

  /**
   * Runs {@link #INSTANCES} limiters allowing leases of {@code maxLeased} turns, each with its own
   * cursor from {@code cursors}, for {@link #RUN_MILLIS}; {@code counted} are the cursors whose
   * reservation statements are counted.
   */
  private static Run run(int maxLeased, Supplier<Cursor> cursors, List<PostgresCursor> counted)
      throws Exception {
    JvmStalls.get();
    String destination = "leased-" + UUID.randomUUID().toString().substring(0, 8);
    String path = "/" + destination;
    List<DestinationLimiter> limiters = new ArrayList<>();
    List<DoorClient> clients = new ArrayList<>();
    ConcurrentLinkedQueue<Duration> lates = new ConcurrentLinkedQueue<>();
    TurnTrace trace = new TurnTrace(RATE);
    AtomicLong requests = new AtomicLong();
    for (int i = 0; i < INSTANCES; i++) {
      Destination d =
          Destination.builder(destination)
              .ratePerSecond(RATE)
              .maxConcurrency(THREADS)
              .maxLeasedTurns(maxLeased)
              .leaseHorizon(HORIZON)
              .build();
      LimiterRegistry registry = new LimiterRegistry(cursors.get());
      DestinationLimiter limiter = registry.limiter(d);
      limiters.add(limiter);
      clients.add(
          DoorClient.opened(
              limiter,
              URI.create(door.url(path)),
              "limiter-" + i,
              (SentRequest sent) -> {
                if (sent.uri().getPath().equals(path)) {
                  lates.add(sent.lateness());
                  TraceLines.record(sent, trace);
                }
              }));
      registry
          .limiter(Destination.builder(destination + "-warm-" + i).ratePerSecond(1).build())
          .acquire()
          .close();
    }
    long statementsBefore = statements(counted);
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(INSTANCES * THREADS);
    long sent = 0;
    long lateAtSteady;
    long askersStopped;
    try {
      List<Future<Long>> done = new ArrayList<>();
      for (int m = 0; m < INSTANCES * THREADS; m++) {
        DoorClient client = clients.get(m % INSTANCES);
        done.add(
            pool.submit(
                () -> {
                  go.await();
                  long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RUN_MILLIS);
                  long n = 0;
                  while (System.nanoTime() - end < 0) {
                    client.send("n=" + requests.incrementAndGet());
                    n++;
                  }
                  return n;
                }));
      }
      go.countDown();
      askersStopped = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RUN_MILLIS);
      Thread.sleep((long) (RunArrivals.START_SECONDS * 1000));
      lateAtSteady = limiters.stream().mapToLong(DestinationLimiter::lateTurnsSkipped).sum();
      for (Future<Long> f : done) {
        sent += f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    long late = limiters.stream().mapToLong(DestinationLimiter::lateTurnsSkipped).sum();
    long unused = limiters.stream().mapToLong(DestinationLimiter::leasedTurnsUnused).sum();
    return new Run(
        RunArrivals.of(door.arrivals(), path),
        sent,
        late,
        late - lateAtSteady,
        unused,
        statements(counted) - statementsBefore,
        List.copyOf(lates),
        trace,
        askersStopped);
  }

  private static long statements(List<PostgresCursor> cursors) {
    return cursors.stream().mapToLong(PostgresCursor::reservationStatements).sum();
  }
}
