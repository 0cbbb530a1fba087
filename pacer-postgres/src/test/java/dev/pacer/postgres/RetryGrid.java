package dev.pacer.postgres;

/**
 * The 5-s retry grid of {@link OutagePolicy}, as the fleet tests expect it on the wall clock:
 * written out here rather than asked of the policy, so that a policy that strays from it fails them.
 */
public final class RetryGrid {

  private static final long GRID_NANOS = 5_000_000_000L;

  private RetryGrid() {}

  /** The first multiple of the grid after {@code epochNanos}. */
  public static long boundaryAfter(long epochNanos) {
    return Math.floorDiv(epochNanos, GRID_NANOS) * GRID_NANOS + GRID_NANOS;
  }

  /** How many boundaries lie in (from, to]. */
  public static long boundariesBetween(long fromEpochNanos, long toEpochNanos) {
    return Math.floorDiv(toEpochNanos, GRID_NANOS) - Math.floorDiv(fromEpochNanos, GRID_NANOS);
  }
}
