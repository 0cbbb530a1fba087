package dev.pacer;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A granted turn: the caller may send its request now. Holds one of the process's concurrency
 * permits for the destination until {@link #close()}, and for a destination with a fleet-wide
 * concurrency cap one of the fleet's slots too (closing gives it back: one round trip to its
 * store); closing twice releases once.
 *
 * <p>{@link #turnNanos()} is when the turn began, on the limiter's {@link TimeSource}: a request
 * sent later than that is late by the difference (the wake-up, and whatever the caller does before
 * sending), which is what {@code SentRequest#lateness()} reports.
 */
public final class Slot implements AutoCloseable {

  private final Permits permits;
  private final FleetCap.Held fleetSlot;
  private final long turnNanos;
  private final AtomicBoolean released = new AtomicBoolean();

  Slot(Permits permits, long turnNanos) {
    this(permits, FleetCap.UNCAPPED_HELD, turnNanos);
  }

  private Slot(Permits permits, FleetCap.Held fleetSlot, long turnNanos) {
    this.permits = permits;
    this.fleetSlot = fleetSlot;
    this.turnNanos = turnNanos;
  }

  /** This turn, also holding {@code fleetSlot}: for a slot not yet handed to the caller. */
  Slot holding(FleetCap.Held fleetSlot) {
    return new Slot(permits, fleetSlot, turnNanos);
  }

  /**
   * The {@link TimeSource#nanoTime()} instant at which this turn began: for a turn on the shared
   * cursor, the local time the cursor answered plus the wait it answered (a cursor's wait counts
   * from its answer); for a turn paced locally, the local turn's instant.
   *
   * @return the turn's instant, on the limiter's clock
   */
  public long turnNanos() {
    return turnNanos;
  }

  @Override
  public void close() {
    if (released.compareAndSet(false, true)) {
      try {
        fleetSlot.release();
      } finally {
        permits.release();
      }
    }
  }
}
