package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A database that stops answering without closing anything: each reservation gives up within the
 * configured bound (about 1 s) and the limiter goes on at the degraded rate, judged at the door:
 * 10/s ÷ 2 = 5/s, no faster and no slower. Its twin, configured for one fetching process, paces at
 * the full rate on the same hung cursor and must break those bounds.
 */
class HungDatabaseTest {

  private static final Duration GAP = Duration.ofMillis(100);
  private static final double RATE = 10;
  private static final int MAX_FETCHING_PROCESSES = 2;

  /** 4 s at 10/s ÷ 2. */
  private static final int DEGRADED_TURNS = 21;

  /** 2 s at the full rate, ample to break the bounds of 5/s. */
  private static final int TWIN_TURNS = 21;

  @Test
  void aBlackholedDatabaseCostsAboutOneSecondPerCooldownThenRecovers() throws Exception {
    try (Door door = Door.start();
        TcpProxy proxy = new TcpProxy(TestDatabase.port());
        PostgresCursor cursor =
            new PostgresCursor(
                PostgresCursorConfig.forUrl(
                        "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres?user=postgres")
                    .failureCooldown(Duration.ofMillis(500))
                    .build())) {
      assertThat(cursor.reserve("hung", GAP).isGranted()).isTrue();

      proxy.blackhole();
      double first =
          secondsFor(() -> assertThat(cursor.reserve("hung", GAP).isUnavailable()).isTrue());
      assertThat(first).as("a hung statement is bounded").isBetween(0.9, 1.6);
      // A retry boundary falls on the next multiple of 500 ms after the failure, however close,
      // and its attempt is the first caller's if the background probe is late to it, so a
      // reservation timed across a boundary may rightly be that attempt. The latched reservations
      // are timed while the boundary's probe hangs on the silent server (watched at the proxy),
      // when no other attempt can be let through: each must answer at once.
      long probe = proxy.connectionsAccepted() + 1;
      assertThat(proxy.awaitConnectionsAccepted(probe, Duration.ofSeconds(2)))
          .as("the probe's connection attempt reached the proxy")
          .isTrue();
      double latched =
          secondsFor(
              () -> {
                for (int i = 0; i < 25; i++) {
                  assertThat(cursor.reserve("hung", GAP).isUnavailable()).isTrue();
                }
              });
      assertThat(latched).as("25 latched reservations touch no network").isLessThan(0.2);
      assertThat(proxy.connectionsAccepted())
          .as("connection attempts but the probe's")
          .isEqualTo(probe);
      double duringProbe =
          secondsFor(() -> assertThat(cursor.reserve("hung", GAP).isUnavailable()).isTrue());
      assertThat(proxy.isOpen(probe))
          .as("the probe was still stuck connecting after the reservation")
          .isTrue();
      assertThat(duringProbe).as("no reservation waits on a reconnection").isLessThan(0.2);
      Thread.sleep(1500);
      assertThat(proxy.isOpen(probe)).as("the probe gave up within its bound").isFalse();
      assertThat(cursor.connectionAttempts()).as("the probe's attempt, bounded").isBetween(2L, 4L);

      // Degraded, the limiter paces at 10/s ÷ maxFetchingProcesses. Its twin, configured for 1,
      // divides by nothing and runs beside it on the same hung cursor: it must break the bounds.
      LimiterRegistry registry = new LimiterRegistry(cursor);
      DestinationLimiter limiter =
          registry.limiter(
              Destination.builder("hung")
                  .ratePerSecond(RATE)
                  .maxConcurrency(1)
                  .maxFetchingProcesses(MAX_FETCHING_PROCESSES)
                  .build());
      DestinationLimiter twin =
          registry.limiter(
              Destination.builder("hung-twin")
                  .ratePerSecond(RATE)
                  .maxConcurrency(1)
                  .maxFetchingProcesses(1)
                  .build());
      DoorClient client = DoorClient.opened(limiter, URI.create(door.url("/hung")), "hung");
      DoorClient twinClient = DoorClient.opened(twin, URI.create(door.url("/twin")), "twin");
      long lateBefore = limiter.lateTurnsSkipped();
      ExecutorService senders = Executors.newFixedThreadPool(2);
      try {
        Future<?> degraded = senders.submit(() -> send(client, DEGRADED_TURNS));
        Future<?> twinDegraded = senders.submit(() -> send(twinClient, TWIN_TURNS));
        degraded.get(30, TimeUnit.SECONDS);
        twinDegraded.get(30, TimeUnit.SECONDS);
      } finally {
        senders.shutdownNow();
      }
      assertThat(limiter.isDegraded()).isTrue();
      List<Arrival> arrivals = door.arrivals();
      Timeline paced = RunArrivals.on(arrivals, "/hung");
      assertThat(paced.size()).as("requests at the door").isEqualTo(DEGRADED_TURNS);
      FleetBounds bounds =
          FleetBounds.at(RATE / MAX_FETCHING_PROCESSES, "hung database, pacing locally", door)
              .turnsCheckedAt(RATE);
      bounds.assertHeld(paced, RunArrivals.steady(paced));
      bounds.assertDelivered(RunArrivals.steady(paced));
      bounds.assertFewLateTurns(limiter.lateTurnsSkipped() - lateBefore, DEGRADED_TURNS);
      Timeline twinPaced = RunArrivals.on(arrivals, "/twin");
      FleetBounds twinBounds =
          FleetBounds.at(
                  RATE / MAX_FETCHING_PROCESSES, "hung database, twin without the divisor", door)
              .turnsCheckedAt(RATE);
      twinBounds.assertWindowBroke(twinPaced);
      twinBounds.assertAggregateBroke(twinPaced);

      proxy.restore();
      Thread.sleep(2500); // a probe at a boundary after the restore (a pending one may still hang)
      Reservation back = cursor.reserve("hung", GAP);
      assertThat(back.isGranted()).as("recovered: %s", back).isTrue();
    }
  }

  private static Void send(DoorClient client, int turns) throws Exception {
    for (int i = 0; i < turns; i++) {
      client.send();
    }
    return null;
  }

  private static double secondsFor(Runnable action) {
    long start = System.nanoTime();
    action.run();
    return (System.nanoTime() - start) / 1e9;
  }
}
