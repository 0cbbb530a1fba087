package dev.pacer.cli.run;

import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterListener;
import dev.pacer.cli.model.LimiterFigures;
import java.util.HashMap;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts what a worker's limiters do, from the registry's {@link LimiterListener} events, for the
 * worker's heartbeat and so for the run's summary. The counts are not split by destination: in
 * per-host mode they are the sum over the worker's hosts.
 *
 * <p>Turns given up as late ({@link DestinationLimiter#lateTurnsSkipped()}) are no event: each
 * limiter counts its own, and a limiter made afresh after an eviction counts from 0. So this holds
 * the limiters its registries hold, and adds an evicted limiter's count when it leaves. One taken
 * back after its eviction counts on from where it was added, so no turn is counted twice and none
 * is lost.
 */
final class LimiterCounts implements LimiterListener {

  private final LongAdder shared = new LongAdder();
  private final LongAdder degraded = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder waitNanos = new LongAdder();
  private final AtomicLong waitMaxNanos = new AtomicLong();
  private final LongAdder throttled = new LongAdder();
  private final LongAdder lockouts = new LongAdder();

  /** The limiters held now, each with the part of its late-turn count already counted. */
  private final Map<DestinationLimiter, Long> held = new HashMap<>();

  /**
   * Evicted limiters, with their late-turn count when they left, until nothing holds them: one
   * taken back counts on from there. Weak, so that an evicted limiter is not kept alive here.
   */
  private final Map<DestinationLimiter, Long> evicted = new WeakHashMap<>();

  /** Late turns of the limiters that have left, counted when they did. */
  private long lateOfEvicted;

  @Override
  public synchronized void limiterCreated(DestinationLimiter limiter) {
    Long counted = evicted.remove(limiter);
    held.put(limiter, counted != null ? counted : limiter.lateTurnsSkipped());
  }

  @Override
  public synchronized void limiterEvicted(DestinationLimiter limiter) {
    Long counted = held.remove(limiter);
    long late = limiter.lateTurnsSkipped();
    if (counted != null) {
      lateOfEvicted += late - counted;
    }
    evicted.put(limiter, late);
  }

  /**
   * Turns this process's limiters gave up because their caller woke too late for them, since they
   * were made: of those held now and of those evicted.
   */
  synchronized long lateTurnsSkipped() {
    long late = lateOfEvicted;
    for (Map.Entry<DestinationLimiter, Long> e : held.entrySet()) {
      late += e.getKey().lateTurnsSkipped() - e.getValue();
    }
    return late;
  }

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
    return new LimiterFigures(
        shared.sum(),
        degraded.sum(),
        refused.sum(),
        waitNanos.sum(),
        waitMaxNanos.get(),
        throttled.sum(),
        lockouts.sum(),
        backoff,
        pacingLocally,
        cursorLatched);
  }
}
