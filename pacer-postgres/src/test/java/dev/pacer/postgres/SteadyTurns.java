package dev.pacer.postgres;

import java.util.function.LongSupplier;

/**
 * One fleet member's count of the turns it takes, and of those its limiter gives up as late, from
 * the run's steady part on ({@link RunArrivals#START_SECONDS} after GO), the part the aggregate and
 * the delivered rate are judged on. At GO every member asks at once, and on a busy host a
 * reservation can be answered after the turn it placed has begun.
 */
final class SteadyTurns {

  private final long steadyFromNanos;
  private final LongSupplier lateTurnsSkipped;
  private long lateAtSteady = -1;
  private long turns;

  /** Counts from {@link RunArrivals#START_SECONDS} after {@code goNanos}. */
  SteadyTurns(long goNanos, LongSupplier lateTurnsSkipped) {
    this.steadyFromNanos = goNanos + (long) (RunArrivals.START_SECONDS * 1e9);
    this.lateTurnsSkipped = lateTurnsSkipped;
  }

  /** Called by the member before each turn it asks for. */
  void beforeTurn() {
    if (lateAtSteady < 0 && System.nanoTime() - steadyFromNanos >= 0) {
      lateAtSteady = lateTurnsSkipped.getAsLong();
    }
    if (lateAtSteady >= 0) {
      turns++;
    }
  }

  /** The turns taken and given up as late in the steady part so far. */
  TurnsTaken taken() {
    return new TurnsTaken(
        turns, lateAtSteady < 0 ? 0 : lateTurnsSkipped.getAsLong() - lateAtSteady);
  }
}
