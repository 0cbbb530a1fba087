package dev.pacer;

import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A granted turn: the caller may send its request now. Holds one of the process's concurrency
 * permits for the destination until {@link #close()}; closing twice releases once.
 *
 * <p>{@link #turnNanos()} is when the turn began, on the limiter's {@link TimeSource}: a request
 * sent later than that is late by the difference (the wake-up, and whatever the caller does before
 * sending), which is what {@link SentRequest#lateness()} reports.
 */
public final class Slot implements AutoCloseable {

  private final Semaphore permits;
  private final long turnNanos;
  private final AtomicBoolean released = new AtomicBoolean();

  Slot(Semaphore permits, long turnNanos) {
    this.permits = permits;
    this.turnNanos = turnNanos;
  }

  /**
   * The {@link TimeSource#nanoTime()} instant at which this turn began: for a turn on the shared
   * cursor, the local time the cursor answered plus the wait it answered (a cursor's wait counts
   * from its answer); for a turn paced locally, the local turn's instant.
   */
  public long turnNanos() {
    return turnNanos;
  }

  @Override
  public void close() {
    if (released.compareAndSet(false, true)) {
      permits.release();
    }
  }
}
