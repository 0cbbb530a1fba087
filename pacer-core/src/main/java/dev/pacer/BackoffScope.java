package dev.pacer;

import dev.pacer.internal.Backoff;

/**
 * Where a destination's backoff multiplier lives: what one 429 or 503 slows.
 *
 * <ul>
 *   <li>{@link #PROCESS}: each process keeps its own multiplier, and a throttled process asks the
 *       shared cursor for wider turns; the others keep their pace, so the fleet slows by the share
 *       of the one process.
 *   <li>{@link #FLEET}: the multiplier is kept beside the shared cursor and applied by the
 *       reservation itself: a 429 anywhere widens every process's turns, and 100 clean answers
 *       anywhere halve it. Needs a cursor that can keep it (Pacer's own table, or a {@link
 *       LocalCursor}); a limiter for a FLEET destination on any other cursor is refused when it is
 *       created. While the cursor is unavailable a process keeps the last multiplier it saw.
 * </ul>
 */
public enum BackoffScope {
  /** Each process keeps its own multiplier. */
  PROCESS,
  /** The multiplier is kept beside the shared cursor, for the whole fleet. */
  FLEET;

  /** The most a backoff widens the interval. */
  public static final int MAX_MULTIPLIER = Backoff.MAX_MULTIPLIER;

  /** Clean answers in a row (in its scope) that halve the multiplier. */
  public static final int CLEAN_ANSWERS_TO_HALVE = Backoff.CLEAN_STREAK_TO_DECAY;
}
