package dev.pacer.internal;

/**
 * The backoff rule, the one home of its arithmetic: a rate-pressure answer doubles the multiplier,
 * up to {@link #MAX_MULTIPLIER}; {@link #CLEAN_STREAK_TO_DECAY} clean answers since the last one
 * halve it, never below 1. {@code BackoffScope} publishes the two constants for backends that write
 * the rule in another language (the PostgreSQL statement); {@code LocalCursor} and the limiter's
 * fleet multiplier apply {@link #doubled} and {@link #halved}.
 *
 * <p>An instance is the per-process throttle multiplier on a destination's interval: "throttle,
 * don't halt".
 *
 * <p>Each rate-pressure response (429, 503) doubles the multiplier, up to {@link #MAX_MULTIPLIER},
 * and restarts the clean streak. After {@link #CLEAN_STREAK_TO_DECAY} consecutive clean responses
 * the multiplier halves, never below 1. At 1 a clean response changes nothing, so a healthy run
 * does no bookkeeping. The multiplier stays per process and reaches the shared cursor only as a
 * wider interval, which can only ever slow the fleet.
 */
public final class Backoff {

  /** The most a backoff widens the interval. */
  public static final int MAX_MULTIPLIER = 16;

  /** Clean answers since the last rate-pressure answer that halve the multiplier. */
  public static final int CLEAN_STREAK_TO_DECAY = 100;

  /**
   * The multiplier after a rate-pressure answer.
   *
   * @param multiplier the multiplier before, 1 to {@link #MAX_MULTIPLIER}
   * @return twice it, at most {@link #MAX_MULTIPLIER}
   */
  public static int doubled(int multiplier) {
    return Math.min(MAX_MULTIPLIER, multiplier * 2);
  }

  /**
   * The multiplier after {@link #CLEAN_STREAK_TO_DECAY} clean answers.
   *
   * @param multiplier the multiplier before
   * @return half of it, at least 1
   */
  public static int halved(int multiplier) {
    return Math.max(1, multiplier / 2);
  }

  /**
   * Whether {@code clean} answers since the last rate-pressure answer halve the multiplier.
   *
   * @param clean the clean answers counted
   * @return whether they are {@link #CLEAN_STREAK_TO_DECAY} or more
   */
  public static boolean halves(int clean) {
    return clean >= CLEAN_STREAK_TO_DECAY;
  }

  private int multiplier = 1;
  private int cleanStreak;

  /** Doubles the multiplier (capped) and restarts the clean streak. */
  public synchronized void onRatePressure() {
    multiplier = doubled(multiplier);
    cleanStreak = 0;
  }

  /** Counts a clean response; halves the multiplier when the streak reaches its length. */
  public synchronized void onCleanResponse() {
    if (multiplier == 1) {
      return;
    }
    cleanStreak++;
    if (halves(cleanStreak)) {
      multiplier = halved(multiplier);
      cleanStreak = 0;
    }
  }

  public synchronized int multiplier() {
    return multiplier;
  }

  public synchronized int cleanStreak() {
    return cleanStreak;
  }
}
