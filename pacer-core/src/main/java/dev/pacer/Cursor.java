package dev.pacer;

import java.time.Duration;

/**
 * Where the pacing cursor of each destination lives: in this process ({@link LocalCursor}) or in
 * a store every process shares (the PostgreSQL cursor in {@code pacer-postgres}).
 *
 * <p>A reservation is one atomic application of {@code next = max(now, next) + interval} to the
 * named cursor (see {@code dev.pacer.internal.Pacing}). Implementations never throw from {@link
 * #reserve} or {@link #tryReserve}: when the store cannot be consulted they answer {@link
 * Reservation#unavailable()} and the caller decides how to pace without it.
 *
 * <p>Implementations must be safe for concurrent use by many threads.
 */
public interface Cursor {

  /** Reserves the next turn for {@code name} at spacing {@code interval}. Never throws. */
  Reservation reserve(String name, Duration interval);

  /**
   * Reserves the next turn only if it starts within {@code maxWait}; otherwise answers {@link
   * Reservation#refused()} and leaves the cursor exactly as it was. Never throws.
   */
  Reservation tryReserve(String name, Duration interval, Duration maxWait);

  /**
   * Forgets the cursor of {@code name}: the next reservation starts now.
   *
   * @throws CursorStoreException if the store cannot be reached (an operator action, so failing
   *     loudly is right here, unlike a reservation)
   */
  void clear(String name);
}
