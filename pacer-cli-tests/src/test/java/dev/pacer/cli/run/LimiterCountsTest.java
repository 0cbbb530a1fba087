package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.cli.model.LimiterFigures;
import dev.pacer.testing.FakeTime;
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
    DestinationLimiter limiter =
        limiters.limiter(Destination.builder("d").ratePerSecond(10).maxConcurrency(1).build());
    for (int i = 0; i < 3; i++) {
      limiter.acquire().close();
    }
    assertThat(limiter.tryAcquire(Duration.ofMillis(10))).isEmpty();
    limiter.noteAnswer(429, null, "u");
    limiter.noteAnswer(403, null, "u");

    LimiterFigures figures =
        counts.figures(
            limiter.backoffMultiplier(), limiter.isDegraded(), limiters.isCursorLatched());
    assertThat(figures)
        .isEqualTo(new LimiterFigures(3, 0, 1, 200_000_000L, 100_000_000L, 1, 1, 2, false, false));
  }

  /**
   * Turns given up as late are the limiters' own counts: one evicted keeps its count in the sum,
   * and one taken back after its eviction counts on from there, never twice.
   */
  @Test
  void countsTheLateTurnsOfEveryLimiterThroughAnEvictionAndATakeBack() throws Exception {
    FakeTime time = new FakeTime();
    LimiterRegistry limiters = new LimiterRegistry(new LocalCursor(time), time);
    LimiterCounts counts = new LimiterCounts();
    limiters.addListener(counts);
    DestinationLimiter d =
        limiters.limiter(Destination.builder("d").ratePerSecond(10).maxConcurrency(1).build());
    d.acquire().close();
    takeALateTurn(time, d);
    assertThat(d.lateTurnsSkipped()).isEqualTo(1);
    assertThat(counts.lateTurnsSkipped()).isEqualTo(1);

    time.advance(Duration.ofSeconds(2));
    assertThat(limiters.evictIdle(Duration.ZERO)).as("evicted").isEqualTo(1);
    assertThat(counts.lateTurnsSkipped()).as("after the eviction").isEqualTo(1);

    d.acquire().close(); // taken back
    takeALateTurn(time, d);
    assertThat(d.lateTurnsSkipped()).isEqualTo(2);
    assertThat(counts.lateTurnsSkipped()).as("taken back, counted on").isEqualTo(2);

    DestinationLimiter e =
        limiters.limiter(Destination.builder("e").ratePerSecond(10).maxConcurrency(1).build());
    e.acquire().close();
    takeALateTurn(time, e);
    assertThat(counts.lateTurnsSkipped()).as("a second limiter's added").isEqualTo(3);
    assertThat(counts.figures(1, false, false).turns()).as("turns taken").isEqualTo(6);
  }

  /**
   * A turn whose sleep ends 60 ms late, over half the 100-ms interval: given up, the next taken.
   */
  private static void takeALateTurn(FakeTime time, DestinationLimiter limiter) throws Exception {
    time.duringNextSleep(() -> time.advance(Duration.ofMillis(60)));
    limiter.acquire().close();
  }
}
