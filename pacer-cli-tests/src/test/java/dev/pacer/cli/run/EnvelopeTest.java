package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.cli.model.HaltReason;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The four bars, with the host's load and the process's RSS injected: nothing here waits. */
class EnvelopeTest {

  private final AtomicReference<Double> load = new AtomicReference<>(0.5);
  private final AtomicLong rss = new AtomicLong(100L << 20);
  private final AtomicLong now = new AtomicLong();
  private final AtomicInteger readings = new AtomicInteger();
  private final Envelope envelope =
      new Envelope(
          4.0,
          1024L << 20,
          () -> {
            readings.incrementAndGet();
            return load.get();
          },
          rss::get,
          now::get);
  private final DestinationLimiter limiter =
      new LimiterRegistry(new LocalCursor())
          .limiter(Destination.builder("envelope-test").ratePerSecond(10).build());

  @Test
  void withinEveryBarNothingIsReported() {
    for (int i = 0; i < 1000; i++) {
      envelope.recordOutcome(i % 200 == 0);
    }
    assertThat(envelope.check(limiter)).isEmpty();
  }

  @Test
  void fiveOrdinaryFailuresInTheLastFiveHundredItemsHalt() {
    for (int i = 0; i < 496; i++) {
      envelope.recordOutcome(false);
    }
    for (int i = 0; i < 4; i++) {
      envelope.recordOutcome(true);
    }
    assertThat(envelope.check(limiter)).isEmpty();
    envelope.recordOutcome(true);
    assertThat(envelope.check(limiter))
        .hasValueSatisfying(
            b -> {
              assertThat(b.bar()).isEqualTo(HaltReason.FETCH_FAILURES);
              assertThat(b.figures()).startsWith("5 of the last 500 items failed");
            });
  }

  @Test
  void failuresOlderThanTheWindowNoLongerCount() {
    for (int i = 0; i < 5; i++) {
      envelope.recordOutcome(true);
    }
    assertThat(envelope.check(limiter)).isPresent();
    for (int i = 0; i < 500; i++) {
      envelope.recordOutcome(false);
    }
    assertThat(envelope.check(limiter)).isEmpty();
  }

  @Test
  void hostLoadAboveTheCeilingHalts() {
    load.set(4.5);
    assertThat(envelope.check(limiter))
        .hasValueSatisfying(
            b -> {
              assertThat(b.bar()).isEqualTo(HaltReason.HOST_LOAD);
              assertThat(b.figures()).contains("4.50", "4.00");
            });
  }

  @Test
  void residentMemoryAboveTheCeilingHalts() {
    rss.set(2048L << 20);
    assertThat(envelope.check(limiter))
        .hasValueSatisfying(
            b -> {
              assertThat(b.bar()).isEqualTo(HaltReason.RSS);
              assertThat(b.figures()).contains("2048 MiB", "1024 MiB");
            });
  }

  @Test
  void theHostsFiguresAreReadOnceASecondAndStandInBetween() {
    assertThat(envelope.check(limiter)).isEmpty();
    load.set(4.5);
    rss.set(2048L << 20);
    now.addAndGet(Envelope.HOST_FIGURES_EVERY.toNanos() - 1);
    for (int i = 0; i < 100; i++) {
      assertThat(envelope.check(limiter)).isEmpty();
    }
    assertThat(readings).hasValue(1);
    now.incrementAndGet();
    assertThat(envelope.check(limiter))
        .hasValueSatisfying(b -> assertThat(b.bar()).isEqualTo(HaltReason.HOST_LOAD));
    assertThat(readings).hasValue(2);
    load.set(0.5);
    now.addAndGet(Envelope.HOST_FIGURES_EVERY.toNanos());
    assertThat(envelope.check(limiter))
        .hasValueSatisfying(b -> assertThat(b.bar()).isEqualTo(HaltReason.RSS));
  }

  @Test
  void aLockedOutDestinationHaltsFirst() {
    load.set(99.0);
    limiter.lockOut("HTTP 403 from http://x/");
    assertThat(envelope.check(limiter))
        .hasValueSatisfying(
            b -> {
              assertThat(b.bar()).isEqualTo(HaltReason.DESTINATION_LOCKOUT);
              assertThat(b.figures()).isEqualTo("HTTP 403 from http://x/");
            });
  }

  @Test
  void thisProcessHasAMeasurableResidentSize() {
    assertThat(Envelope.residentBytes()).isGreaterThan(1L << 20);
  }
}
