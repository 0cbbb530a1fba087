package dev.pacer.spi;

import java.time.Duration;
import java.util.OptionalInt;

/**
 * Where the pacing cursor of each destination lives: in this process ({@link
 * dev.pacer.LocalCursor}) or in a store every process shares (the PostgreSQL cursor in {@code
 * pacer-postgres}).
 *
 * <p>A reservation is one atomic application of {@code next = max(now, next) + interval} to the
 * named cursor (see {@code dev.pacer.internal.Pacing}). Implementations never throw from {@link
 * #reserve} or {@link #tryReserve}: when the store cannot be consulted they answer {@link
 * Reservation#unavailable()} and the caller decides how to pace without it.
 *
 * <p>A granted turn's wait is measured from the moment the call returns: a cursor whose store is a
 * round trip away accounts for the trip, so that its turn starts at the instant its store computed,
 * not one round trip late.
 *
 * <p>Implementations must be safe for concurrent use by many threads.
 */
public interface Cursor {

  /**
   * Reserves the next turn for {@code name} at spacing {@code interval}. Never throws.
   *
   * <p>{@code notBefore}, from now, is where the turn starts if the stored cursor turns out to be
   * missing or must be reset: the caller's estimate of how far ahead the turns already granted
   * reach (a limiter passes where it last saw the cursor plus the most turns the rest of the fleet
   * can hold beyond that). The turns handed out before are still on their way; restarting at now
   * would overlap them. An intact cursor ignores it.
   *
   * @param name the destination's name, the key of its cursor
   * @param interval the spacing of turns
   * @param notBefore where the turn starts, from now, if the cursor is missing or must be reset
   * @return the turn granted and its wait, or why there is none
   */
  Reservation reserve(String name, Duration interval, Duration notBefore);

  /**
   * Like {@link #reserve(String, Duration, Duration)}, but only if the turn starts within {@code
   * maxWait}; otherwise answers {@link Reservation#refused()} and leaves the cursor exactly as it
   * was. Never throws.
   *
   * @param name the destination's name, the key of its cursor
   * @param interval the spacing of turns
   * @param notBefore where the turn starts, from now, if the cursor is missing or must be reset
   * @param maxWait the latest start accepted for the turn, from now
   * @return the turn granted and its wait, refused if it would start after {@code maxWait}, or why
   *     there is none
   */
  Reservation tryReserve(String name, Duration interval, Duration notBefore, Duration maxWait);

  /**
   * Reserves the next turn for {@code name} at spacing {@code interval}. Never throws.
   *
   * @param name the destination's name, the key of its cursor
   * @param interval the spacing of turns
   * @return the turn granted and its wait, or why there is none
   */
  default Reservation reserve(String name, Duration interval) {
    return reserve(name, interval, Duration.ZERO);
  }

  /**
   * {@link #tryReserve(String, Duration, Duration, Duration)} with no lower bound.
   *
   * @param name the destination's name, the key of its cursor
   * @param interval the spacing of turns
   * @param maxWait the latest start accepted for the turn, from now
   * @return the turn granted and its wait, refused if it would start after {@code maxWait}, or why
   *     there is none
   */
  default Reservation tryReserve(String name, Duration interval, Duration maxWait) {
    return tryReserve(name, interval, Duration.ZERO, maxWait);
  }

  /**
   * Whether the cursor is latched as unavailable just now: its store was lost and, until it is
   * tried again, every reservation answers {@link Reservation#unavailable()} without asking it (for
   * the PostgreSQL cursor, while the database's outage policy holds it down). A cursor that never
   * latches answers false. For monitoring; a reservation does not consult it.
   *
   * @return whether reservations answer unavailable without asking the store just now
   */
  default boolean isLatched() {
    return false;
  }

  /**
   * How many processes took turns of {@code name} from this cursor's store lately, this one
   * included, as far as the cursor last learned it; empty if it cannot tell. Answered from what the
   * cursor already knows, never by a round trip of its own, and so, once its store is lost, the
   * count from just before. A limiter asks it after each shared turn, and while the store is
   * unavailable paces at the ceiling divided by the larger of the last answer and the destination's
   * {@code maxFetchingProcesses} (the answer counted to at most {@link
   * dev.pacer.Destination#MOST_PROCESSES_COUNTED}). A cursor that counts no one answers empty.
   *
   * @param name the destination's name, the key of its cursor
   * @return the processes seen taking turns, at least 1, or empty
   */
  default OptionalInt fetchingProcesses(String name) {
    return OptionalInt.empty();
  }

  /**
   * Whether this cursor keeps a backoff multiplier for the fleet ({@link
   * dev.pacer.BackoffScope#FLEET}).
   *
   * @return whether {@link #reserveUnderFleetBackoff} and {@link #throttled} are supported
   */
  default boolean keepsFleetBackoff() {
    return false;
  }

  /**
   * A reservation under the fleet's backoff ({@link dev.pacer.BackoffScope#FLEET}): the turn is
   * spaced by {@code interval} times the multiplier the cursor keeps for {@code name}, and {@code
   * cleanAnswers} (clean answers the caller heard since its last such reservation) count towards
   * halving it: 100 anywhere in the fleet since the last rate-pressure answer halve it, never below
   * 1. {@code maxWait} null reserves unconditionally. A granted answer carries the multiplier
   * ({@link Reservation#fleetBackoff()}). Never throws.
   *
   * @param name the destination's name, the key of its cursor
   * @param interval the spacing of turns before the fleet's backoff multiplier
   * @param notBefore where the turn starts, from now, if the cursor is missing or must be reset
   * @param maxWait the latest start accepted for the turn, from now, or null for no limit
   * @param cleanAnswers clean answers heard since this caller's last such reservation
   * @return the turn granted, its wait and the multiplier applied, or why there is none
   * @throws UnsupportedOperationException unless {@link #keepsFleetBackoff()}
   */
  default Reservation reserveUnderFleetBackoff(
      String name, Duration interval, Duration notBefore, Duration maxWait, int cleanAnswers) {
    throw new UnsupportedOperationException(this + " keeps no fleet backoff");
  }

  /**
   * A rate-pressure answer (429, 503) under the fleet's backoff: the multiplier kept for {@code
   * name} doubles, up to 16, and the count of clean answers starts again. Never throws.
   *
   * @param name the destination's name, the key of its cursor
   * @return the new multiplier, or empty if the cursor could not record it
   */
  default OptionalInt throttled(String name) {
    return OptionalInt.empty();
  }

  /**
   * Holds every turn of {@code name} until {@code delay} from now, in every process that shares
   * this cursor: the destination answered with {@code Retry-After}. The stored cursor becomes
   * {@code max(cursor, now + delay)}, so later reservations wait without being told, and the
   * cursor's {@linkplain #listen listeners} hear of it at once, so that turns granted before and
   * still waiting wait too. Never throws.
   *
   * @param name the destination's name, the key of its cursor
   * @param delay how long from now every turn is held
   * @return whether the store recorded the pause (false: only this process knows of it)
   */
  default boolean pause(String name, Duration delay) {
    return false;
  }

  /**
   * Records a lockout of {@code name} for every process that shares this cursor: later reservations
   * answer {@link Reservation#lockedOut}, until {@link #clearLockout}, and the cursor's listeners
   * hear of it at once. The first reason recorded is kept. Never throws.
   *
   * @param name the destination's name, the key of its cursor
   * @param reason why, as the operator will read it
   * @return whether the store recorded the lockout (false: only this process knows of it)
   */
  default boolean lockOut(String name, String reason) {
    return false;
  }

  /**
   * Clears a recorded lockout of {@code name}: an operator's acknowledgement.
   *
   * @param name the destination's name, the key of its cursor
   * @throws CursorStoreException if the store cannot be reached
   */
  default void clearLockout(String name) {}

  /**
   * Tells {@code listener} of the pauses and lockouts of {@code name} that any process records, as
   * they happen, and of those already in force. A cursor that cannot tell ignores it.
   *
   * @param name the destination's name, the key of its cursor
   * @param listener told of each pause and lockout
   */
  default void listen(String name, Listener listener) {}

  /**
   * Stops telling {@code listener} of the pauses and lockouts of {@code name}: what {@link #listen}
   * added, removed, so that a destination no one here paces any more costs the cursor nothing. A
   * cursor that cannot tell, or that was never asked to, ignores it. Never throws.
   *
   * @param name the destination's name, the key of its cursor
   * @param listener a listener added for {@code name}
   */
  default void unlisten(String name, Listener listener) {}

  /** Hears what a destination told any process of the fleet. Called on the cursor's thread. */
  interface Listener {
    /**
     * A pause ({@code Retry-After}) is in force for {@code left} from now.
     *
     * @param left how long the pause lasts from now
     */
    void paused(Duration left);

    /**
     * The destination is locked out, for {@code reason}.
     *
     * @param reason the reason recorded with the lockout
     */
    void lockedOut(String reason);
  }

  /**
   * Forgets the cursor of {@code name}: the next reservation starts now.
   *
   * @param name the destination's name, the key of its cursor
   * @throws CursorStoreException if the store cannot be reached (an operator action, so failing
   *     loudly is right here, unlike a reservation)
   */
  void clear(String name);
}
