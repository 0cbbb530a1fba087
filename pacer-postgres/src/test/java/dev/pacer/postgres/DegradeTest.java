package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.FakeTime;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The coordinator is unreachable: reservations answer "unavailable" without throwing, the limiter
 * paces at the divided rate, the outage policy keeps an outage to one connection attempt per retry
 * boundary and one WARN, retries fall on shared boundaries, and the cursor reconnects once the
 * database is there again. The policy runs on a fake clock, so nothing here waits 5 s.
 */
class DegradeTest {

  private static final Duration GAP = Duration.ofMillis(100);

  @Test
  void anOutageIsLatchedPacedLocallyAndRecovered() throws Exception {
    int port = freePort();
    FakeTime time = new FakeTime();
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(new Tee(originalErr, log), true, StandardCharsets.UTF_8));
    try (PostgresCursor cursor =
        new PostgresCursor(
            PostgresCursorConfig.forUrl(
                    "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres")
                .timeSource(time)
                .backgroundReconnect(false)
                .build())) {

      long retryBoundary = Math.floorDiv(time.epochMillis(), 5000) * 5000 + 5000;
      for (int i = 0; i < 25; i++) {
        Reservation r = cursor.reserve("outage", GAP);
        assertThat(r.isUnavailable()).as("reservation %d: %s", i, r).isTrue();
      }
      assertThat(cursor.connectionAttempts()).isEqualTo(1);
      assertThat(warnings(log)).isEqualTo(1);

      Destination destination =
          Destination.builder("outage")
              .ratePerSecond(10)
              .maxConcurrency(1)
              .maxFetchingProcesses(3)
              .build();
      DestinationLimiter limiter = new LimiterRegistry(cursor, time).limiter(destination);
      for (int i = 0; i < 4; i++) {
        limiter.acquire().close();
      }
      // The first local turn waits for the turns the fleet may still hold on the lost cursor, which
      // this process never saw: the loss plus one interval, plus the other two processes' turns.
      assertThat(time.sleepsMillis())
          .as("10/s divided by 3 processes")
          .containsExactly(300L, 300L, 300L, 300L);
      assertThat(limiter.isDegraded()).isTrue();
      assertThat(cursor.connectionAttempts()).isEqualTo(1);

      // Retries happen at multiples of 5 s on the wall clock, the first on the next one.
      time.advance(Duration.ofMillis(retryBoundary - 1 - time.epochMillis()));
      assertThat(cursor.reserve("outage", GAP).isUnavailable()).isTrue();
      assertThat(cursor.connectionAttempts()).as("1 ms before the boundary").isEqualTo(1);
      time.advance(Duration.ofMillis(2));
      assertThat(cursor.reserve("outage", GAP).isUnavailable()).isTrue();
      assertThat(cursor.connectionAttempts()).as("one attempt per cooldown").isEqualTo(2);
      assertThat(warnings(log)).as("one WARN per outage").isEqualTo(1);
      assertThat(cursor.failureCount()).as("each failure counted").isEqualTo(2);

      try (EmbeddedPostgres restored = EmbeddedPostgres.builder().setPort(port).start()) {
        time.advance(Duration.ofMillis(2400));
        assertThat(cursor.reserve("outage", GAP).isUnavailable()).as("still latched").isTrue();
        assertThat(cursor.connectionAttempts()).isEqualTo(2);
        time.advance(Duration.ofMillis(5100));
        Reservation back = cursor.reserve("outage", GAP);
        assertThat(back.isGranted()).as("reconnected: %s", back).isTrue();
        assertThat(cursor.connectionAttempts()).isEqualTo(3);
        limiter.acquire().close();
        assertThat(limiter.isDegraded()).isFalse();
        cursor.close();
      }
    } finally {
      System.setErr(originalErr);
    }
  }

  @Test
  void aLateRetryKeepsToTheGridOfBoundaries() throws Exception {
    FakeTime time = new FakeTime();
    try (PostgresCursor cursor =
        new PostgresCursor(
            PostgresCursorConfig.forUrl(
                    "jdbc:postgresql://127.0.0.1:" + freePort() + "/postgres?user=postgres")
                .timeSource(time)
                .backgroundReconnect(false)
                .build())) {
      long firstBoundary = Math.floorDiv(time.epochMillis(), 5000) * 5000 + 5000;
      assertThat(cursor.reserve("late", GAP).isUnavailable()).isTrue();
      // Every thread of the process slept through the boundary; the retry happens 3 s late.
      time.advance(Duration.ofMillis(firstBoundary + 3000 - time.epochMillis()));
      assertThat(cursor.reserve("late", GAP).isUnavailable()).isTrue();
      assertThat(cursor.connectionAttempts()).isEqualTo(2);
      time.advance(Duration.ofMillis(1999));
      assertThat(cursor.reserve("late", GAP).isUnavailable()).isTrue();
      assertThat(cursor.connectionAttempts())
          .as("still latched 1 ms before the next boundary")
          .isEqualTo(2);
      time.advance(Duration.ofMillis(2));
      assertThat(cursor.reserve("late", GAP).isUnavailable()).isTrue();
      assertThat(cursor.connectionAttempts())
          .as("retried on the next boundary, not one later")
          .isEqualTo(3);
    }
  }

  private static long warnings(ByteArrayOutputStream log) {
    return log.toString(StandardCharsets.UTF_8)
        .lines()
        .filter(l -> l.contains("WARN") && l.contains("PostgreSQL (") && l.contains("unavailable"))
        .count();
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** Writes to two streams. */
  private static final class Tee extends OutputStream {
    private final OutputStream a;
    private final OutputStream b;

    Tee(OutputStream a, OutputStream b) {
      this.a = a;
      this.b = b;
    }

    @Override
    public synchronized void write(int c) throws java.io.IOException {
      a.write(c);
      b.write(c);
    }

    @Override
    public synchronized void write(byte[] buf, int off, int len) throws java.io.IOException {
      a.write(buf, off, len);
      b.write(buf, off, len);
    }
  }
}
