package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.Reservation;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A database that stops answering without closing anything: each reservation gives up within the
 * configured bound (about 1 s) and the limiter goes on at the degraded rate.
 */
class HungDatabaseTest {

  private static final Duration GAP = Duration.ofMillis(100);

  @Test
  void aBlackholedDatabaseCostsAboutOneSecondPerCooldownThenRecovers() throws Exception {
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port());
        PostgresCursor cursor = new PostgresCursor(PostgresCursorConfig
            .forUrl("jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres?user=postgres")
            .failureCooldown(Duration.ofMillis(500)).build())) {
      assertThat(cursor.reserve("hung", GAP).isGranted()).isTrue();

      proxy.blackhole();
      double first = secondsFor(() -> assertThat(cursor.reserve("hung", GAP).isUnavailable()).isTrue());
      assertThat(first).as("a hung statement is bounded").isBetween(0.9, 1.6);
      double latched = secondsFor(() -> {
        for (int i = 0; i < 25; i++) {
          assertThat(cursor.reserve("hung", GAP).isUnavailable()).isTrue();
        }
      });
      assertThat(latched).as("25 latched reservations touch no network").isLessThan(0.2);

      // At the next retry boundary (a multiple of 500 ms, at least 500 ms away) the background
      // probe tries to connect and hangs on the silent server for its bound. A reservation timed
      // while that attempt is held open must answer at once; timed with no probe running it would
      // prove nothing, so the attempt is watched at the proxy.
      long probe = proxy.connectionsAccepted() + 1;
      assertThat(proxy.awaitConnectionsAccepted(probe, Duration.ofSeconds(2)))
          .as("the probe's connection attempt reached the proxy").isTrue();
      double duringProbe = secondsFor(() -> assertThat(cursor.reserve("hung", GAP).isUnavailable()).isTrue());
      assertThat(proxy.isOpen(probe)).as("the probe was still stuck connecting after the reservation")
          .isTrue();
      assertThat(duringProbe).as("no reservation waits on a reconnection").isLessThan(0.2);
      Thread.sleep(1500);
      assertThat(proxy.isOpen(probe)).as("the probe gave up within its bound").isFalse();
      assertThat(cursor.connectionAttempts()).as("the probe's attempt, bounded").isBetween(2L, 4L);

      Destination d = Destination.builder("hung").ratePerSecond(10).maxConcurrency(1)
          .maxFetchingProcesses(2).build();
      DestinationLimiter limiter = new LimiterRegistry(cursor).limiter(d);
      double threeTurns = secondsFor(() -> {
        for (int i = 0; i < 3; i++) {
          try {
            limiter.acquire().close();
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        }
      });
      assertThat(limiter.isDegraded()).isTrue();
      assertThat(threeTurns).as("degraded pacing at 10/s / 2").isBetween(0.39, 2.6);

      proxy.restore();
      Thread.sleep(2500); // a probe at a boundary after the restore (a pending one may still hang)
      Reservation back = cursor.reserve("hung", GAP);
      assertThat(back.isGranted()).as("recovered: %s", back).isTrue();
    }
  }

  private static double secondsFor(Runnable action) {
    long start = System.nanoTime();
    action.run();
    return (System.nanoTime() - start) / 1e9;
  }
}
