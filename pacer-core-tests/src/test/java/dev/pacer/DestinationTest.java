package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DestinationTest {

  @Test
  void buildsWithDefaultsAndDerivesTheInterval() {
    Destination d = Destination.builder("images.example.com").ratePerSecond(7).build();
    assertThat(d.interval()).isEqualTo(Duration.ofNanos(142_857_143));
    assertThat(d.maxFetchingProcesses()).isEqualTo(1);
    assertThat(d.lockoutStatusCodes()).containsExactly(403);
    assertThat(d.backoffStatusCodes()).containsExactly(429, 503);
    assertThat(d).isEqualTo(d.toBuilder().build());
  }

  @ParameterizedTest
  @ValueSource(
      doubles = {
        0,
        -1,
        Double.NaN,
        Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY,
        1e12,
        1_000_000.5
      })
  void rejectsBadRatesNamingTheValue(double rate) {
    assertThatThrownBy(() -> Destination.builder("x").ratePerSecond(rate))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ratePerSecond")
        .hasMessageContaining(String.valueOf(rate));
  }

  @Test
  void theLongestHonestQueueIsTheFleetsTurnsAtTheWidestBackoff() {
    Destination d =
        Destination.builder("x").ratePerSecond(7).maxConcurrency(6).maxFetchingProcesses(3).build();
    assertThat(d.maxQueuedTurns()).isEqualTo(18);
    // The doc comment's example: 18 turns x 143 ms x 16 = 41 s.
    assertThat(d.longestHonestQueue()).isEqualTo(Duration.ofNanos(142_857_143L * 18 * 16));
    assertThat(d.longestHonestQueue().toSeconds()).isEqualTo(41);
    Destination huge =
        Destination.builder("x")
            .ratePerSecond(0.000001)
            .maxConcurrency(Integer.MAX_VALUE)
            .maxFetchingProcesses(Integer.MAX_VALUE)
            .build();
    assertThat(huge.longestHonestQueue())
        .as("saturates")
        .isEqualTo(Duration.ofNanos(Long.MAX_VALUE));
  }

  @Test
  void acceptsTheRateBounds() {
    assertThat(Destination.builder("x").ratePerSecond(1_000_000).build().interval())
        .isEqualTo(Duration.ofNanos(1000));
    assertThat(Destination.builder("x").ratePerSecond(0.001).build().interval())
        .isEqualTo(Duration.ofSeconds(1000));
  }

  @Test
  void rejectsMissingRate() {
    assertThatThrownBy(() -> Destination.builder("x").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ratePerSecond");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "has space",
        "tab\there",
        "new\nline",
        "nul\u0000",
        "bell\u0007",
        "nbsp\u00a0x",
        "zero\u200bwidth",
        "'; DROP TABLE x; --"
      })
  void rejectsBadNames(String name) {
    assertThatThrownBy(() -> Destination.builder(name))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("name");
  }

  /** The longest DNS name, 253 characters: a destination is most often named by its host. */
  private static final String LONGEST_HOST_NAME =
      String.join(".", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));

  @Test
  void acceptsAnyDnsNameAndNothingLonger() {
    assertThat(LONGEST_HOST_NAME).hasSize(253);
    assertThat(Destination.builder(LONGEST_HOST_NAME).ratePerSecond(1).build().name())
        .isEqualTo(LONGEST_HOST_NAME);
    assertThatThrownBy(() -> Destination.builder(LONGEST_HOST_NAME + "x"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("name must be 1-253 characters, got 254 characters");
  }

  @Test
  void badNameMessageShowsControlCharactersEscaped() {
    assertThatThrownBy(() -> Destination.builder("a\u001b[31mb"))
        .hasMessageContaining("\\u001b")
        .hasMessageNotContaining("\u001b");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "a",
        "images.example.com",
        "'quoted'",
        "x;DROP--",
        "é-ünicode",
        "a234567890123456789012345678901234567890123456789012345678901234x"
      })
  void acceptsPrintableNames(String name) {
    assertThat(Destination.builder(name).ratePerSecond(1).build().name()).isEqualTo(name);
  }

  @Test
  void rejectsBadCountsAndCodes() {
    assertThatThrownBy(() -> Destination.builder("x").maxConcurrency(0))
        .hasMessageContaining("maxConcurrency")
        .hasMessageContaining("0");
    assertThatThrownBy(() -> Destination.builder("x").maxFetchingProcesses(-3))
        .hasMessageContaining("maxFetchingProcesses")
        .hasMessageContaining("-3");
    assertThatThrownBy(() -> Destination.builder("x").backoffStatusCodes(Set.of(429, 999)))
        .hasMessageContaining("backoffStatusCodes")
        .hasMessageContaining("999");
    assertThatThrownBy(
            () -> Destination.builder("x").ratePerSecond(1).lockoutStatusCodes(Set.of(429)).build())
        .hasMessageContaining("429");
  }
}
