package dev.pacer.postgres;

import java.time.Duration;

/**
 * The retry grid of {@link OutagePolicy}, as the fleet tests expect it on the wall clock (5 s
 * unless a test sets a shorter cooldown): written out here rather than asked of the policy, so that
 * a policy that strays from it fails them.
 */
public final class RetryGrid {

  private static final Duration DEFAULT_GRID = Duration.ofSeconds(5);

  private RetryGrid() {}

  /** The first multiple of the 5-s grid after {@code epochNanos}. */
  public static long boundaryAfter(long epochNanos) {
    return boundaryAfter(epochNanos, DEFAULT_GRID);
  }

  /** The first multiple of {@code grid} after {@code epochNanos}. */
  public static long boundaryAfter(long epochNanos, Duration grid) {
    long gridNanos = grid.toNanos();
    return Math.floorDiv(epochNanos, gridNanos) * gridNanos + gridNanos;
  }

  /**
   * Where the hand-over after PostgreSQL's return at {@code epochNanos} ends, on the 5-s grid: the
   * fleet is back on the first boundary after the return, and paces locally as well until one
   * cooldown after the next one.
   */
  public static long handOverEnds(long epochNanos) {
    return boundaryAfter(boundaryAfter(boundaryAfter(epochNanos)));
  }

  /** How many boundaries of the 5-s grid lie in (from, to]. */
  public static long boundariesBetween(long fromEpochNanos, long toEpochNanos) {
    return boundariesBetween(fromEpochNanos, toEpochNanos, DEFAULT_GRID);
  }

  /** How many boundaries of {@code grid} lie in (from, to]. */
  public static long boundariesBetween(long fromEpochNanos, long toEpochNanos, Duration grid) {
    long gridNanos = grid.toNanos();
    return Math.floorDiv(toEpochNanos, gridNanos) - Math.floorDiv(fromEpochNanos, gridNanos);
  }
}
