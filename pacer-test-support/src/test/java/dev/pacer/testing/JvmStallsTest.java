package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class JvmStallsTest {

  private static final long MS = 1_000_000;

  @Test
  void aLatenessCostsTheTurnsThatBeganMoreThanTheLimitBeforeItsEnd() {
    // At 100/s a turn is given up when woken over 5 ms late.
    assertThat(JvmStalls.turnsGivenUp(5 * MS, 5 * MS, 100)).isZero();
    assertThat(JvmStalls.turnsGivenUp(6 * MS, 5 * MS, 100)).isEqualTo(1);
    assertThat(JvmStalls.turnsGivenUp(15 * MS, 5 * MS, 100)).isEqualTo(1);
    assertThat(JvmStalls.turnsGivenUp(16 * MS, 5 * MS, 100)).isEqualTo(2);
    assertThat(JvmStalls.turnsGivenUp(105 * MS, 5 * MS, 100)).isEqualTo(10);
    // At 2/s a 105-ms stall costs nothing: the limit is 250 ms.
    assertThat(JvmStalls.turnsGivenUp(105 * MS, 250 * MS, 2)).isZero();
  }
}
