package dev.pacer;

import java.time.Duration;
import java.util.Objects;

/**
 * Hears what the limiters of one {@link LimiterRegistry} do, for metrics and run summaries: added
 * once to the registry ({@link LimiterRegistry#addListener}), it hears every limiter the registry
 * has handed out and every one it hands out later. Every method does nothing by default, so a
 * listener overrides only what it counts.
 *
 * <p>The events, and when each fires:
 *
 * <ul>
 *   <li>{@link #limiterCreated}: the registry handed out a limiter for the first time, or already
 *       held it when this listener was added, or took back one it had evicted; once per limiter per
 *       listener between evictions. A new limiter is announced before the registry hands it to
 *       anyone. The place to register what is read from the limiter rather than counted ({@link
 *       DestinationLimiter#backoffMultiplier()}, {@link DestinationLimiter#isDegraded()}, {@link
 *       LimiterRegistry#isCursorLatched()}).
 *   <li>{@link #limiterEvicted}: the registry let go of an idle limiter ({@link
 *       LimiterRegistry#evictIdle}); the place to drop what was registered for it, so that nothing
 *       keeps it alive.
 *   <li>{@link #turn}: an {@code acquire} or {@code tryAcquire} ended with a turn ({@link
 *       Outcome#SHARED}: reserved on the shared cursor; {@link Outcome#DEGRADED}: paced locally
 *       because the shared cursor was unavailable), or a {@code tryAcquire} found no turn within
 *       its {@code maxWait} ({@link Outcome#REFUSED}: no permit, no fleet slot or no turn in time;
 *       nothing consumed). Fires on the caller's thread, as the slot is handed over, after the
 *       check for late turns: whatever time a listener takes here, the request leaves that much
 *       late, unseen by the check. A turn given up because its thread woke too late is not one: the
 *       turn taken instead is. An acquire that throws (lockout, interrupt) fires no turn.
 *   <li>{@link #throttled}: this process heard a rate-pressure answer ({@link
 *       DestinationLimiter#backoff()}, directly or through {@link DestinationLimiter#noteAnswer}
 *       with a 429 or 503); fires after the multiplier has doubled, with the new one.
 *   <li>{@link #lockedOut}: the limiter learnt of a lockout: heard here ({@link
 *       DestinationLimiter#lockOut}, a 403 through {@code noteAnswer}), announced by another
 *       process through the cursor, or answered by the cursor to a reservation. At most once per
 *       limiter, since a lockout is irreversible in it.
 * </ul>
 *
 * <p>Listeners run on the thread that caused the event, inside the limiter's call: they must be
 * quick and must not block. A listener that throws never breaks a reservation, a backoff or a
 * lockout: the registry logs its first failure once, at WARN, and goes on.
 */
public interface LimiterListener {

  /** How a call for a turn ended. */
  enum Outcome {
    /** A turn reserved on the shared cursor: the fleet-wide ceiling holds it. */
    SHARED,
    /**
     * A turn paced locally, at the ceiling divided by {@code maxFetchingProcesses} (or by the
     * processes the cursor saw taking turns, if more), because the shared cursor was unavailable.
     */
    DEGRADED,
    /** A {@code tryAcquire} that found no turn within its {@code maxWait}. */
    REFUSED
  }

  /**
   * One call for a turn, as it ended.
   *
   * @param destination the destination's name
   * @param outcome how it ended
   * @param waited from the call until the slot was handed over (permit, fleet slot and the turn
   *     itself), on the limiter's {@link TimeSource}; for a refusal, until it gave up
   */
  record Turn(String destination, Outcome outcome, Duration waited) {
    /**
     * Checks that no component is null.
     *
     * @param destination the destination's name
     * @param outcome how the call ended
     * @param waited how long it waited
     */
    public Turn {
      Objects.requireNonNull(destination, "destination");
      Objects.requireNonNull(outcome, "outcome");
      Objects.requireNonNull(waited, "waited");
    }
  }

  /**
   * The registry handed out {@code limiter}, or held it when this listener was added.
   *
   * @param limiter the limiter, from now on heard by this listener
   */
  default void limiterCreated(DestinationLimiter limiter) {}

  /**
   * The registry evicted {@code limiter}, idle ({@link LimiterRegistry#evictIdle}): it hands out
   * the same limiter again, announced by {@link #limiterCreated}, only if something still holds it
   * when its destination is next asked for; otherwise a new one.
   *
   * @param limiter the limiter, no longer held by its registry
   */
  default void limiterEvicted(DestinationLimiter limiter) {}

  /**
   * A call for a turn ended (see the class comment).
   *
   * @param turn how it ended, and how long it waited
   */
  default void turn(Turn turn) {}

  /**
   * A rate-pressure answer doubled the backoff of {@code destination}, now {@code multiplier}.
   *
   * @param destination the destination's name
   * @param multiplier the backoff multiplier after the doubling, 1 to 16
   */
  default void throttled(String destination, int multiplier) {}

  /**
   * {@code destination} is locked out, for {@code reason}.
   *
   * @param destination the destination's name
   * @param reason why, as the lockout recorded it (for example "HTTP 403 from ...")
   */
  default void lockedOut(String destination, String reason) {}
}
