package dev.pacer.cli.ui;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ProgressTest {

  @Test
  void rendersDoneOfTotalRateEtaThrottledAndDegraded() {
    assertThat(Progress.render(50, 200, 6.96, 150, 5.0, 3, false))
        .isEqualTo("[#######.....................] 50/200  7.0 req/s  ETA 0:30  throttled 3");
    assertThat(Progress.render(200, 200, 0, 0, 0, 0, true))
        .isEqualTo(
            "[############################] 200/200  0.0 req/s  ETA 0:00  throttled 0"
                + "  DEGRADED (pacing locally)");
    assertThat(Progress.render(0, 100_000, 0, 100_000, 10, 0, false)).contains("ETA 2:46:40");
    assertThat(Progress.render(0, 10, 0, 10, 0, 0, false)).contains("ETA -:--");
  }
}
