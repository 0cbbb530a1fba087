package dev.pacer.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.testing.FakeTime;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@code pacer.cursor.latched} against a real PostgreSQL cursor: 0 while the database answers, 1
 * once it has stopped and the outage policy holds it down, 0 again after the retry boundary that
 * finds it back. The policy runs on a fake clock, so nothing waits for the boundary.
 */
class CursorLatchedTest {

  @Test
  void theGaugeIsOneWhileTheOutagePolicyHoldsTheStoppedDatabaseDown() throws Exception {
    FakeTime time = new FakeTime();
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    try (RestartablePostgres postgres = new RestartablePostgres();
        PostgresCursor cursor =
            new PostgresCursor(
                PostgresCursorConfig.forUrl(postgres.jdbcUrl())
                    .timeSource(time)
                    .backgroundReconnect(false)
                    .build())) {
      assertThat(cursor.connect(Duration.ofSeconds(10))).isTrue();
      LimiterRegistry limiters = new LimiterRegistry(cursor, time);
      new PacerMetrics(limiters).bindTo(meters);
      DestinationLimiter limiter =
          limiters.limiter(
              Destination.builder("latched")
                  .ratePerSecond(10)
                  .maxConcurrency(1)
                  .maxFetchingProcesses(3)
                  .build());

      limiter.acquire().close();
      assertThat(latched(meters)).isZero();
      assertThat(count(meters, "shared")).isEqualTo(1);

      postgres.stopImmediately();
      limiter.acquire().close();
      assertThat(cursor.isLatched()).isTrue();
      assertThat(latched(meters)).isEqualTo(1.0);
      assertThat(meters.get("pacer.degraded").tag("destination", "latched").gauge().value())
          .isEqualTo(1.0);
      assertThat(count(meters, "degraded")).isEqualTo(1);

      postgres.start();
      time.advance(Duration.ofMillis(cursor.outagePolicy().untilNextAttempt().toMillis() + 1));
      limiter.acquire().close();
      assertThat(latched(meters)).as("back after the boundary").isZero();
      assertThat(count(meters, "shared")).isEqualTo(2);
    }
  }

  private static double latched(SimpleMeterRegistry meters) {
    return meters.get("pacer.cursor.latched").tag("destination", "latched").gauge().value();
  }

  private static double count(SimpleMeterRegistry meters, String outcome) {
    return meters
        .get("pacer.reservations")
        .tag("destination", "latched")
        .tag("outcome", outcome)
        .counter()
        .count();
  }
}
