package dev.pacer;

import java.time.Duration;

/**
 * The late-turn rule: a turn its caller wakes for more than half an interval after it began is
 * given up, and another one taken. A request sent that late would leave close behind the next
 * turn's, and the destination would see two requests where the ceiling allows one. Kept to less
 * than an interval late, no 1-s window at the destination holds more than the ceiling + 1 (a window
 * then covers turns from at most 1 s + the limit, under ceiling + 1 intervals). On a machine so
 * busy that sleeps end an interval late, a skipped turn costs the run one interval, never the
 * ceiling.
 *
 * <p>The limit is at least {@value #MIN_LIMIT_NANOS} ns: a sleep cannot end more precisely than
 * that, and without the floor turns of a few hundred microseconds would be given up over ordinary
 * wake-up jitter. Above 500 requests/s the bound at the door is therefore the ceiling plus the
 * turns of a millisecond, not the ceiling + 1.
 *
 * <p>{@link DestinationLimiter} applies it to every turn it grants, counts the turns it gives up
 * ({@link DestinationLimiter#lateTurnsSkipped()}), logs a WARN at the first, second, fourth and so
 * on of each destination, and every one at DEBUG on this class's logger, with its destination and
 * how late it was woken; a caller that is handed a turn some other way (a claim that reserved it in
 * the same statement) applies it with {@link #isTooLate}.
 */
public final class LateTurns {

  /** The least limit, however short the interval. */
  public static final long MIN_LIMIT_NANOS = 1_000_000;

  private LateTurns() {}

  /**
   * How late a turn at {@code interval} may be woken for and still be taken.
   *
   * @param interval the spacing of the turns
   * @return half of it, at least {@value #MIN_LIMIT_NANOS} ns
   */
  public static Duration limit(Duration interval) {
    return Duration.ofNanos(limitNanos(interval));
  }

  /**
   * Whether a turn woken for {@code late} after it began is given up.
   *
   * @param late how long after the turn began its caller woke (negative if before)
   * @param interval the spacing of the turns
   * @return whether {@code late} is beyond {@link #limit}
   */
  public static boolean isTooLate(Duration late, Duration interval) {
    return late.compareTo(limit(interval)) > 0;
  }

  static long limitNanos(Duration interval) {
    return Math.max(interval.toNanos() / 2, MIN_LIMIT_NANOS);
  }
}
