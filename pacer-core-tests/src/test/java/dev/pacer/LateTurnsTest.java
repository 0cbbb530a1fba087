package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LateTurnsTest {

  @Test
  void halfTheIntervalAtLeastAMillisecond() {
    assertThat(LateTurns.limit(Duration.ofMillis(100))).isEqualTo(Duration.ofMillis(50));
    assertThat(LateTurns.limit(Duration.ofMillis(3))).isEqualTo(Duration.ofNanos(1_500_000));
    assertThat(LateTurns.limit(Duration.ofMillis(2))).isEqualTo(Duration.ofMillis(1));
    assertThat(LateTurns.limit(Duration.ofNanos(400_000)))
        .as("the floor")
        .isEqualTo(Duration.ofMillis(1));
  }

  @Test
  void aTurnAtTheLimitIsTakenAndOneBeyondItGivenUp() {
    Duration interval = Duration.ofMillis(100);
    assertThat(LateTurns.isTooLate(Duration.ofMillis(-5), interval)).isFalse();
    assertThat(LateTurns.isTooLate(Duration.ofMillis(50), interval)).isFalse();
    assertThat(LateTurns.isTooLate(Duration.ofNanos(50_000_001), interval)).isTrue();
    assertThat(LateTurns.isTooLate(Duration.ofMillis(1), Duration.ofNanos(100_000))).isFalse();
    assertThat(LateTurns.isTooLate(Duration.ofNanos(1_000_001), Duration.ofNanos(100_000)))
        .isTrue();
  }
}
