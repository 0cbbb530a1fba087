package dev.pacer.cli.run;

import dev.pacer.LateTurns;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Stalls of this process, measured beside its fetch threads: a daemon thread that asks to sleep
 * {@value #NAP_MILLIS} ms and notes each time it runs again later than the late-turn limit of the
 * run's rate. The JVM-pause monitors of Hadoop and Elasticsearch do the same at a coarser grain.
 *
 * <p>Why: a turn whose thread wakes more than the limit after it began is given up ({@link
 * LateTurns}). A thread wakes that late either because the whole process could not run (a host with
 * fewer cores than runnable threads, a collection, a safepoint) or because the thread was busy
 * elsewhere when its turn came. The first is the host's, and costs the run turns however well the
 * worker is built; the second is the worker's. The worker's end-of-run line says how many turns its
 * stalls may have cost, so that whoever reads it (an operator, a fleet test) can tell the two
 * apart: many turns given up beside few stalls is a fault of the worker.
 *
 * <p>A stall of length {@code L} can cost the turns that began in its first {@code L - limit}:
 * {@code ceil((L - limit) x rate)} of them at the fleet's rate, and no more than the worker's fetch
 * threads, each of which holds one turn at a time. Summed over the stalls that is an upper bound on
 * the turns the stalls cost, not an estimate of them. Per host the rate and the limit are the run's
 * per-host default ({@code --rate}): a host its own ceiling paces faster has a shorter limit, and a
 * stall may cost it a turn this does not count.
 */
final class ProcessStalls implements AutoCloseable {

  /** How long the sampler sleeps between two looks at the clock: 100 wake-ups a second at most. */
  static final long NAP_MILLIS = 10;

  private final long limitNanos;
  private final double ratePerSecond;
  private final int threads;
  private final Thread sampler;

  private long stalls;
  private long longestNanos;
  private long turnsTheyMayCost;

  /**
   * Stalls beyond the late-turn limit of {@code interval}, for a worker of {@code threads} fetch
   * threads taking turns {@code interval} apart; measured from {@link #start}.
   */
  ProcessStalls(Duration interval, int threads) {
    this.limitNanos = LateTurns.limit(interval).toNanos();
    this.ratePerSecond = 1e9 / Math.max(1, interval.toNanos());
    this.threads = threads;
    this.sampler = new Thread(this::sample, "pacer-stalls");
    sampler.setDaemon(true);
  }

  /** Starts measuring: at the start line, since no turn is taken before it. */
  void start() {
    sampler.start();
  }

  private void sample() {
    long nap = TimeUnit.MILLISECONDS.toNanos(NAP_MILLIS);
    long before = System.nanoTime();
    while (!Thread.currentThread().isInterrupted()) {
      LockSupport.parkNanos(nap);
      long now = System.nanoTime();
      noted(now - before - nap);
      before = now;
    }
  }

  /** Notes a wake-up {@code lateNanos} late. */
  synchronized void noted(long lateNanos) {
    longestNanos = Math.max(longestNanos, lateNanos);
    long turns = turnsCost(lateNanos, limitNanos, ratePerSecond, threads);
    if (turns > 0) {
      stalls++;
      turnsTheyMayCost += turns;
    }
  }

  /**
   * The most turns a stall of {@code lateNanos} may cost a worker of {@code threads} fetch threads
   * whose turns are given up {@code limitNanos} late, at {@code ratePerSecond}.
   */
  static long turnsCost(long lateNanos, long limitNanos, double ratePerSecond, int threads) {
    if (lateNanos <= limitNanos) {
      return 0;
    }
    return Math.min(threads, (long) Math.ceil((lateNanos - limitNanos) * ratePerSecond / 1e9));
  }

  /** What was measured so far. */
  synchronized Figures figures() {
    return new Figures(
        stalls,
        TimeUnit.NANOSECONDS.toMillis(limitNanos),
        TimeUnit.NANOSECONDS.toMillis(longestNanos),
        turnsTheyMayCost);
  }

  /**
   * The stalls beyond the late-turn limit ({@code limitMillis}), the longest lateness of all, and
   * the most turns the stalls may have cost.
   */
  record Figures(long stalls, long limitMillis, long longestMillis, long turnsTheyMayCost) {}

  @Override
  public void close() {
    sampler.interrupt();
  }
}
