package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.FakeTime;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A worker's limiter figures, counted from a real limiter's events on a fake clock. */
class LimiterCountsTest {

  @Test
  void countsTurnsWaitsAnswersAndALockout() throws Exception {
    FakeTime time = new FakeTime();
    LimiterRegistry limiters = new LimiterRegistry(new LocalCursor(time), time);
    LimiterCounts counts = new LimiterCounts();
    limiters.addListener(counts);
    DestinationLimiter limiter = limiters.limiter(Destination.builder("d").ratePerSecond(10)
        .maxConcurrency(1).build());
    for (int i = 0; i < 3; i++) {
      limiter.acquire().close();
    }
    assertThat(limiter.tryAcquire(Duration.ofMillis(10))).isEmpty();
    limiter.noteAnswer(429, null, "u");
    limiter.noteAnswer(403, null, "u");

    LimiterFigures figures = counts.figures(limiter.backoffMultiplier(), limiter.isDegraded(),
        limiters.isCursorLatched());
    assertThat(figures).isEqualTo(
        new LimiterFigures(3, 0, 1, 200_000_000L, 100_000_000L, 1, 1, 2, false, false));
  }
}
