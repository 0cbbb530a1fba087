package dev.pacer.testing;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Steps of this host's wall clock against its monotonic clock, sampled every 50 ms on a daemon
 * thread for as long as the test JVM runs.
 *
 * <p>Why: the cursor counts turns on the database's wall clock ({@code clock_timestamp()}) and the
 * fleet sleeps on the monotonic clock. When the wall clock of the database's host steps forward by
 * some Δ while turns are queued on the cursor, the turns granted after the step start Δ sooner than
 * the queued ones they should follow, and for about Δ two grids of turns overlap at the door
 * (docs/reliability.md, "What the fleet does not survive"). A fleet test whose destination counted
 * more than the ceiling can then tell that known limit, measured here, from a fault of its own. In
 * the tests the database runs on this host, so its clock is this one.
 */
public final class WallClockSteps {

  /** The least jump between two samples 50 ms apart taken for a step: far above any slewing. */
  public static final long STEP_NANOS = 20_000_000L;

  private static final long SAMPLE_MILLIS = 50;

  /** Ten minutes of samples: longer than any test's run. */
  private static final int KEPT = 12_000;

  private static final WallClockSteps INSTANCE = new WallClockSteps();

  /** Pairs of (monotonic instant, wall minus monotonic), oldest first. */
  private final Deque<long[]> samples = new ArrayDeque<>();

  private WallClockSteps() {
    Thread sampler = new Thread(this::sampleForever, "wall-clock-steps");
    sampler.setDaemon(true);
    sampler.start();
  }

  /** The JVM's sampler, started on first use. */
  public static WallClockSteps get() {
    return INSTANCE;
  }

  private void sampleForever() {
    while (true) {
      long mono = System.nanoTime();
      long offset = System.currentTimeMillis() * 1_000_000L - mono;
      synchronized (samples) {
        samples.addLast(new long[] {mono, offset});
        if (samples.size() > KEPT) {
          samples.removeFirst();
        }
      }
      try {
        Thread.sleep(SAMPLE_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /**
   * The largest step forward of the wall clock between consecutive samples within [{@code from},
   * {@code to}] ({@link System#nanoTime()} instants), or 0 if none was as large as {@link
   * #STEP_NANOS}. The clock's millisecond resolution and any slewing stay far below that.
   *
   * @param from the first monotonic instant of the run
   * @param to the last
   * @return the step, in nanoseconds
   */
  public long largestStepBetween(long from, long to) {
    long largest = 0;
    synchronized (samples) {
      long[] previous = null;
      for (long[] s : samples) {
        if (s[0] < from - SAMPLE_MILLIS * 1_000_000L || s[0] > to + SAMPLE_MILLIS * 1_000_000L) {
          previous = s;
          continue;
        }
        if (previous != null) {
          largest = Math.max(largest, s[1] - previous[1]);
        }
        previous = s;
      }
    }
    return largest >= STEP_NANOS ? largest : 0;
  }
}
