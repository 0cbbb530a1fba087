package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ProcessStallsTest {

  private static final long MS = 1_000_000L;

  @Test
  void aStallCostsTheTurnsThatBeganInItBeyondTheLimitAndNoMoreThanTheThreads() {
    // At 10/s the limit is 50 ms: a stall up to it costs nothing, one 1 ms longer a turn.
    assertThat(ProcessStalls.turnsCost(50 * MS, 50 * MS, 10, 6)).isZero();
    assertThat(ProcessStalls.turnsCost(51 * MS, 50 * MS, 10, 6)).isOne();
    assertThat(ProcessStalls.turnsCost(150 * MS, 50 * MS, 10, 6)).isOne();
    assertThat(ProcessStalls.turnsCost(151 * MS, 50 * MS, 10, 6)).isEqualTo(2);
    // Each thread holds one turn at a time: a long stall costs at most the threads' turns.
    assertThat(ProcessStalls.turnsCost(5_000 * MS, 50 * MS, 10, 6)).isEqualTo(6);
  }

  @Test
  void theFiguresSumTheStallsBeyondTheLimitAndKeepTheLongestLateness() {
    ProcessStalls stalls = new ProcessStalls(Duration.ofMillis(100), 6);
    stalls.noted(3 * MS);
    stalls.noted(40 * MS);
    stalls.noted(120 * MS);
    stalls.noted(260 * MS);
    stalls.noted(-1 * MS);

    assertThat(stalls.figures()).isEqualTo(new ProcessStalls.Figures(2, 50, 260, 4));
  }
}
