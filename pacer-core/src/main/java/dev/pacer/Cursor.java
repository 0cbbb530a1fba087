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

  /**
   * Reserves the next turn for {@code name} at spacing {@code interval}, starting no earlier than
   * {@code notBefore} from now. Never throws.
   *
   * <p>{@code notBefore} is what the caller knows of turns already granted: a limiter passes the
   * distance to where the cursor stood after its own last reservation. While the stored cursor is
   * intact it is already past that point and nothing changes; if it was lost or reset, the turns
   * handed out before are still on their way, and this keeps new turns from overlapping them.
   */
  Reservation reserve(String name, Duration interval, Duration notBefore);

  /**
   * Like {@link #reserve(String, Duration, Duration)}, but only if the turn starts within {@code
   * maxWait}; otherwise answers {@link Reservation#refused()} and leaves the cursor exactly as it
   * was. Never throws.
   */
  Reservation tryReserve(String name, Duration interval, Duration notBefore, Duration maxWait);

  /** Reserves the next turn for {@code name} at spacing {@code interval}. Never throws. */
  default Reservation reserve(String name, Duration interval) {
    return reserve(name, interval, Duration.ZERO);
  }

  /** {@link #tryReserve(String, Duration, Duration, Duration)} with no lower bound. */
  default Reservation tryReserve(String name, Duration interval, Duration maxWait) {
    return tryReserve(name, interval, Duration.ZERO, maxWait);
  }

  /**
   * Forgets the cursor of {@code name}: the next reservation starts now.
   *
   * @throws CursorStoreException if the store cannot be reached (an operator action, so failing
   *     loudly is right here, unlike a reservation)
   */
  void clear(String name);
}
