package dev.pacer.cli.run;

import dev.pacer.LimiterListener;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts what a worker's limiters do, from the registry's {@link LimiterListener} events, for the
 * worker's heartbeat and so for the run's summary. The counts are not split by destination: in
 * per-host mode they are the sum over the worker's hosts.
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

  /**
   * The counts so far, with the limiters' state just now: the widest backoff multiplier, whether
   * any paces locally, and whether the shared cursor is latched as unavailable.
   */
  LimiterFigures figures(int backoff, boolean pacingLocally, boolean cursorLatched) {
    return new LimiterFigures(shared.sum(), degraded.sum(), refused.sum(), waitNanos.sum(),
        waitMaxNanos.get(), throttled.sum(), lockouts.sum(), backoff, pacingLocally,
        cursorLatched);
  }
}
