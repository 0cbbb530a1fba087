package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RetryAfterTest {

  private static final Instant NOW = Instant.parse("2026-11-30T09:00:00Z");

  @Test
  void deltaSeconds() {
    assertThat(RetryAfter.parse("3", NOW)).contains(Duration.ofSeconds(3));
    assertThat(RetryAfter.parse(" 120 ", NOW)).contains(Duration.ofMinutes(2));
    assertThat(RetryAfter.parse("0", NOW)).isEmpty();
  }

  @Test
  void anHttpDateCountsFromNow() {
    assertThat(RetryAfter.parse("Mon, 30 Nov 2026 09:00:42 GMT", NOW))
        .contains(Duration.ofSeconds(42));
    assertThat(RetryAfter.parse("Mon, 30 Nov 2026 08:59:00 GMT", NOW)).as("in the past").isEmpty();
  }

  @Test
  void anythingElseIsNoPause() {
    assertThat(RetryAfter.parse(null, NOW)).isEmpty();
    assertThat(RetryAfter.parse("", NOW)).isEmpty();
    assertThat(RetryAfter.parse("-5", NOW)).isEmpty();
    assertThat(RetryAfter.parse("soon", NOW)).isEmpty();
    assertThat(RetryAfter.parse("1.5", NOW)).isEmpty();
  }

  @Test
  void anEnormousDelayIsKeptLongForTheLimiterToCap() {
    Optional<Duration> huge = RetryAfter.parse("99999999999999999999999", NOW);
    assertThat(huge).isPresent();
    assertThat(huge.get()).isGreaterThan(Duration.ofDays(365));
  }
}
