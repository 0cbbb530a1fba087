package dev.pacer.cli.model;

import java.util.Locale;

/**
 * What a destination's limiter did, as Pacer's meters show it ({@code pacer-micrometer}'s {@code
 * PacerMetrics}: the same events, counted the same way): for one worker process as it reports
 * itself, or summed over the workers of a run.
 *
 * @param shared turns reserved on the shared cursor ({@code pacer.reservations{outcome=shared}})
 * @param degraded turns paced locally while the cursor was unavailable ({@code outcome=degraded})
 * @param refused calls that found no turn in time ({@code outcome=refused})
 * @param waitNanos the waits for those turns, added up ({@code pacer.acquire.wait}'s total)
 * @param waitMaxNanos the longest of them ({@code pacer.acquire.wait}'s max)
 * @param throttled rate-pressure answers heard ({@code pacer.throttled})
 * @param lockouts lockouts learnt of ({@code pacer.lockouts}): per process, 0 or 1
 * @param backoff the backoff multiplier when last reported ({@code pacer.backoff.multiplier}); over
 *     a run, the largest
 * @param pacingLocally whether the limiter paced locally when last reported ({@code
 *     pacer.degraded}); over a run, whether any worker did
 * @param cursorLatched whether the shared cursor was latched as unavailable when last reported
 *     ({@code pacer.cursor.latched}); over a run, whether any worker's was
 */
public record LimiterFigures(
    long shared,
    long degraded,
    long refused,
    long waitNanos,
    long waitMaxNanos,
    long throttled,
    long lockouts,
    int backoff,
    boolean pacingLocally,
    boolean cursorLatched) {

  /** Nothing done yet. */
  public static final LimiterFigures NONE =
      new LimiterFigures(0, 0, 0, 0, 0, 0, 0, 1, false, false);

  /** Turns taken, shared or degraded: the calls whose wait is timed. */
  public long turns() {
    return shared + degraded;
  }

  /** The mean wait for a turn, in milliseconds; 0 without turns. */
  public double waitMeanMillis() {
    return turns() == 0 ? 0 : waitNanos / 1e6 / turns();
  }

  public double waitMaxMillis() {
    return waitMaxNanos / 1e6;
  }

  /** These figures and {@code other}'s, as one run's: counts added, the state's worst kept. */
  public LimiterFigures plus(LimiterFigures other) {
    return new LimiterFigures(
        shared + other.shared,
        degraded + other.degraded,
        refused + other.refused,
        waitNanos + other.waitNanos,
        Math.max(waitMaxNanos, other.waitMaxNanos),
        throttled + other.throttled,
        lockouts + other.lockouts,
        Math.max(backoff, other.backoff),
        pacingLocally || other.pacingLocally,
        cursorLatched || other.cursorLatched);
  }

  /** In one line for people. */
  public String describe() {
    return String.format(
        Locale.ROOT,
        "%d turn(s): %d shared, %d degraded (paced locally), %d"
            + " refused; wait for a turn mean %.1f ms, max %.1f ms; %d throttled, %d lockout(s);"
            + " at the end backoff x%d%s%s",
        turns(),
        shared,
        degraded,
        refused,
        waitMeanMillis(),
        waitMaxMillis(),
        throttled,
        lockouts,
        backoff,
        pacingLocally ? ", PACING LOCALLY" : "",
        cursorLatched ? ", CURSOR LATCHED" : "");
  }
}
