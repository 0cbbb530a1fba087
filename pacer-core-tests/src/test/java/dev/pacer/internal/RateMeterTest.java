package dev.pacer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class RateMeterTest {

  private static final long S = 1_000_000_000L;

  @Test
  void measuresTheRateOfRecentEvents() {
    RateMeter meter = new RateMeter(64, 10 * S);
    assertThat(meter.perSecond(0)).isZero();
    for (int i = 0; i <= 20; i++) {
      meter.record(i * S / 4); // 4 per second for 5 s
    }
    assertThat(meter.perSecond(5 * S)).isCloseTo(4.0, within(1e-9));
  }

  @Test
  void forgetsEventsOutsideTheWindow() {
    RateMeter meter = new RateMeter(64, 10 * S);
    for (int i = 0; i < 10; i++) {
      meter.record(i * S / 100); // a fast burst long ago
    }
    for (int i = 0; i <= 10; i++) {
      meter.record(100 * S + i * S); // 1 per second, recently
    }
    assertThat(meter.perSecond(110 * S)).isCloseTo(1.0, within(1e-9));
    assertThat(meter.perSecond(200 * S)).as("nothing recent").isZero();
  }
}
