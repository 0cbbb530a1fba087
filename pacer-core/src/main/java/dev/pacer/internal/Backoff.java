package dev.pacer.internal;

import dev.pacer.BackoffScope;

/**
 * The per-process throttle multiplier on a destination's interval: "throttle, don't halt".
 *
 * <p>Each rate-pressure response (429, 503) doubles the multiplier, up to {@link #MAX_MULTIPLIER},
 * and restarts the clean streak. After {@link #CLEAN_STREAK_TO_DECAY} consecutive clean responses
 * the multiplier halves, never below 1. At 1 a clean response changes nothing, so a healthy run
 * does no bookkeeping. The multiplier stays per process and reaches the shared cursor only as a
 * wider interval, which can only ever slow the fleet.
 */
public final class Backoff {

  public static final int MAX_MULTIPLIER = BackoffScope.MAX_MULTIPLIER;
  public static final int CLEAN_STREAK_TO_DECAY = BackoffScope.CLEAN_ANSWERS_TO_HALVE;

  private int multiplier = 1;
  private int cleanStreak;

  /** Doubles the multiplier (capped) and restarts the clean streak. */
  public synchronized void onRatePressure() {
    multiplier = Math.min(MAX_MULTIPLIER, multiplier * 2);
    cleanStreak = 0;
  }

  /** Counts a clean response; halves the multiplier when the streak reaches its length. */
  public synchronized void onCleanResponse() {
    if (multiplier == 1) {
      return;
    }
    cleanStreak++;
    if (cleanStreak >= CLEAN_STREAK_TO_DECAY) {
      multiplier = Math.max(1, multiplier / 2);
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
