package dev.pacer.internal;

/**
 * The pacing algorithm, as a pure function of (stored cursor, now, interval).
 *
 * <h2>The idea</h2>
 *
 * A pacer that allows one event per {@code interval} only needs to remember one number: the
 * earliest instant at which the <em>next</em> event may happen. We call that number the
 * <em>cursor</em>. A caller who wants a turn does three things at once:
 *
 * <ol>
 *   <li>its turn starts at {@code start = max(now, cursor)}: now, if the pacer has been idle long
 *       enough, otherwise at the cursor, behind everyone who reserved before it;
 *   <li>it moves the cursor to {@code start + interval}, so the next caller queues behind it;
 *   <li>it is told to wait {@code start - now} and then go, holding nothing while it waits.
 * </ol>
 *
 * That is {@code next = max(now, next) + interval}, the arithmetic of every in-memory pacer. Pacer
 * makes it fleet-wide by running exactly this update as one atomic statement on a row that every
 * process shares, on the database's clock (see the PostgreSQL cursor). This class is the reference
 * statement of the rule: {@code LocalCursor} runs it in memory, and the SQL mirrors it term by
 * term.
 *
 * <h2>Worked example</h2>
 *
 * A ceiling of 7 per second is an interval of 142.857 ms. The cursor starts empty (no row yet).
 *
 * <pre>
 *   now (ms)  cursor before  start = max(now, cursor)  cursor after  wait
 *   1000      (none)         1000                      1142.857      0
 *   1001      1142.857       1142.857                  1285.714      141.857
 *   1002      1285.714       1285.714                  1428.571      283.714
 *   2000      1428.571       2000 (idle: cursor stale) 2142.857      0
 * </pre>
 *
 * Three callers arriving together are spread 142.857 ms apart; a caller after an idle spell goes at
 * once, and the idle time is <em>not</em> banked: unlike a token bucket there is no burst after a
 * quiet period, which is what a third party's per-second quota wants.
 *
 * <h2>A lost cursor</h2>
 *
 * When there is no stored cursor (a deleted row) or it must be reset, the turns already handed out
 * are still on their way; starting at {@code now} would overlap them, a burst of as many turns as
 * were queued. So the caller says {@code earliest}: the soonest a turn may start if the cursor was
 * lost, from what it knows (where it last saw the cursor, plus the most turns the rest of the fleet
 * can hold beyond that). An intact cursor ignores it: it already orders every turn.
 *
 * <h2>Refusals and resets</h2>
 *
 * {@link #reserveWithin} refuses when the wait would exceed a bound, and then the cursor is left
 * exactly as it was: a refused caller has consumed nothing. A cursor further ahead of now than
 * {@code resetBeyond} cannot come from honest queueing (a clock step, a hand-edited row), unless a
 * pause explains it: a {@code Retry-After} moves the cursor to the pause's end, and the turns
 * reserved meanwhile queue behind that. So the bound is counted from the later of now and the end
 * of the pause recorded with the cursor, a pause being believed no further ahead of now than the
 * longest any destination may ask for ({@code longestPause}): a row that says more came from
 * something else. A store that can hold such a cursor reads it through {@link #plausible}, which
 * treats it as lost, and the caller starts at {@code earliest}, which costs at most one early turn.
 * With a bound of 2 min and a longest pause of a day, at now = 0 (minutes):
 *
 * <pre>
 *   cursor  pause ends  bound counted from  read as
 *   11      10          10                  11: a minute of queue behind a 10-min pause
 *   13      10          10                  lost: 3 min behind it
 *   13      (none)      0                   lost
 *   1450    never       1440 (a day)        lost: 10 min behind the longest pause
 * </pre>
 *
 * A cursor held in memory on the clock it is read with never jumps ahead, and skips that step.
 *
 * <p>All values are nanoseconds on one clock; a missing cursor is {@link #NO_CURSOR}.
 */
public final class Pacing {

  /** The value of a cursor that was never set, or was cleared. */
  public static final long NO_CURSOR = Long.MIN_VALUE;

  /** The end of a pause that was never recorded. */
  public static final long NO_PAUSE = Long.MIN_VALUE;

  /** The outcome of a reservation: the cursor to store and how long the caller waits. */
  public record Turn(long newCursor, long waitNanos) {}

  private Pacing() {}

  /** Reserves a turn unconditionally. */
  public static Turn reserve(long cursor, long now, long interval) {
    return reserve(cursor, now, now, interval);
  }

  /** Reserves a turn; {@code earliest} is where a lost cursor restarts. */
  public static Turn reserve(long cursor, long now, long earliest, long interval) {
    long start = startOfTurn(cursor, now, earliest);
    return new Turn(start + interval, start - now);
  }

  /**
   * Reserves a turn only if it starts within {@code maxWait} of now; otherwise returns {@code null}
   * and the caller must leave the cursor untouched.
   */
  public static Turn reserveWithin(long cursor, long now, long interval, long maxWait) {
    return reserveWithin(cursor, now, now, interval, maxWait);
  }

  /** {@link #reserveWithin}; {@code earliest} is where a lost cursor restarts. */
  public static Turn reserveWithin(
      long cursor, long now, long earliest, long interval, long maxWait) {
    long start = startOfTurn(cursor, now, earliest);
    if (start - now > maxWait) {
      return null;
    }
    return new Turn(start + interval, start - now);
  }

  /**
   * The stored cursor as a reservation reads it: {@link #NO_CURSOR} (lost) when it is further ahead
   * than {@code resetBeyond} of the later of now and {@code pausedUntil}, the end of the pause
   * recorded with it ({@link #NO_PAUSE} if none), counted at most {@code longestPause} ahead of
   * now; so that it is reset rather than queued behind.
   */
  public static long plausible(
      long cursor, long pausedUntil, long now, long resetBeyond, long longestPause) {
    long explained = Math.max(now, Math.min(pausedUntil, now + longestPause));
    return cursor != NO_CURSOR && cursor - explained > resetBeyond ? NO_CURSOR : cursor;
  }

  private static long startOfTurn(long cursor, long now, long earliest) {
    if (cursor == NO_CURSOR) {
      return Math.max(now, earliest);
    }
    return Math.max(now, cursor);
  }
}
