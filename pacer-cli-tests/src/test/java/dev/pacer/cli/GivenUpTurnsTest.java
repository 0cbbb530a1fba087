package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.LocalDateTime;
import java.time.LocalTime;
import org.junit.jupiter.api.Test;

class GivenUpTurnsTest {

  private static final long MS = 1_000_000L;

  @Test
  void aStampIsPlacedOnTheDayNearestTheReading() {
    LocalDateTime beforeMidnight = LocalDateTime.of(2026, 12, 7, 23, 59, 59, 900_000_000);
    assertThat(GivenUpTurns.sinceReading(beforeMidnight, LocalTime.of(0, 0, 0, 100_000_000)))
        .as("just after midnight, the next day")
        .isEqualTo(200 * MS);
    LocalDateTime afterMidnight = LocalDateTime.of(2026, 12, 8, 0, 0, 0, 100_000_000);
    assertThat(GivenUpTurns.sinceReading(afterMidnight, LocalTime.of(23, 59, 59, 900_000_000)))
        .as("just before midnight, the day before")
        .isEqualTo(-200 * MS);
    assertThat(GivenUpTurns.sinceReading(afterMidnight, LocalTime.of(0, 0, 1, 100_000_000)))
        .isEqualTo(1_000 * MS);
  }

  @Test
  void onlyTheDebugLinesOfEachTurnAreCountedByDestinationAndSpan() {
    LocalTime now = LocalTime.now();
    String err =
        line(now.minusSeconds(30), "DEBUG", "LateTurns - Destination a.test: turn given up,")
            + line(now.minusSeconds(20), "DEBUG", "LateTurns - Destination a.test: turn given up,")
            + line(now.minusSeconds(20), "DEBUG", "LateTurns - Destination b.test: turn given up,")
            + line(
                now.minusSeconds(20),
                "WARN",
                "DestinationLimiter - Destination a.test: a turn was given up because");
    long reading = System.nanoTime();
    GivenUpTurns turns = GivenUpTurns.in(err);
    assertThat(turns.size()).isEqualTo(3);
    long second = 1_000 * MS;
    assertThat(turns.of("a.test", reading - 25 * second, reading)).isEqualTo(1);
    assertThat(turns.of("a.test", reading - 35 * second, reading)).isEqualTo(2);
    assertThat(turns.of("b.test", reading - 25 * second, reading - 15 * second)).isEqualTo(1);
    assertThat(turns.of("b.test", reading - 15 * second, reading)).isZero();
  }

  private static String line(LocalTime at, String level, String rest) {
    return String.format(
        "%02d:%02d:%02d.%03d %s %s (limit 125 ms)%n",
        at.getHour(), at.getMinute(), at.getSecond(), at.getNano() / 1_000_000, level, rest);
  }
}
