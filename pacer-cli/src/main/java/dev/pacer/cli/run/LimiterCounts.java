package dev.pacer.cli.run;

import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterListener;
import dev.pacer.LimiterRegistry;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts what a worker's limiters do, from the registry's {@link LimiterListener} events, for the
 * worker's heartbeat and so for the run's summary. A worker paces one destination, so the counts
 * are not split by destination.
 */
final class LimiterCounts implements LimiterListener {

  private final LongAdder shared = new LongAdder();
  private final LongAdder degraded = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder waitNanos = new LongAdder();
  private final AtomicLong waitMaxNanos = new AtomicLong();
  private final LongAdder throttled = new LongAdder();
  private final LongAdder lockouts = new LongAdder();

  @Override
  public void turn(Turn turn) {
    switch (turn.outcome()) {
      case SHARED -> shared.increment();
      case DEGRADED -> degraded.increment();
      case REFUSED -> {
        refused.increment();
        return;
      }
    }
    long waited = turn.waited().toNanos();
    waitNanos.add(waited);
    waitMaxNanos.accumulateAndGet(waited, Math::max);
  }

  @Override
  public void throttled(String destination, int multiplier) {
    throttled.increment();
  }

  @Override
  public void lockedOut(String destination, String reason) {
    lockouts.increment();
  }

  /** The counts so far, with what {@code limiter} and {@code registry} show just now. */
  LimiterFigures figures(DestinationLimiter limiter, LimiterRegistry registry) {
    return new LimiterFigures(shared.sum(), degraded.sum(), refused.sum(), waitNanos.sum(),
        waitMaxNanos.get(), throttled.sum(), lockouts.sum(), limiter.backoffMultiplier(),
        limiter.isDegraded(), registry.isCursorLatched());
  }
}
