package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.FakeTime;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class LocalCursorTest {

  private final FakeTime time = new FakeTime();
  private final LocalCursor cursor = new LocalCursor(time);
  private final Duration gap = Duration.ofMillis(100);

  @Test
  void spacesTurnsByTheIntervalAndForgetsOnClear() {
    assertThat(cursor.reserve("a", gap).waitTime()).isZero();
    assertThat(cursor.reserve("a", gap).waitTime()).isEqualTo(gap);
    assertThat(cursor.reserve("b", gap).waitTime()).as("names do not share").isZero();
    cursor.clear("a");
    assertThat(cursor.reserve("a", gap).waitTime()).isZero();
  }

  @Test
  void refusalConsumesNothing() {
    cursor.reserve("a", gap);
    cursor.reserve("a", gap); // next turn now starts 200 ms ahead
    assertThat(cursor.tryReserve("a", gap, Duration.ofMillis(150)).isRefused()).isTrue();
    assertThat(cursor.tryReserve("a", gap, Duration.ofMillis(200)).waitTime())
        .isEqualTo(Duration.ofMillis(200));
  }
}
