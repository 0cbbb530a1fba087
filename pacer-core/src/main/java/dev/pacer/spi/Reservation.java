package dev.pacer.spi;

import dev.pacer.internal.Backoff;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * What a {@link Cursor} answers to a reservation: a granted turn and its wait, a refusal (for
 * {@link Cursor#tryReserve}, the turn would start too late and nothing was consumed), a lockout
 * recorded for the destination (no turn, with the recorded reason), or "unavailable" (the cursor's
 * store could not be asked). Unavailable is a value, never an exception, and never confused with a
 * zero wait.
 */
public final class Reservation {

  /** The four kinds of answer. */
  public enum Outcome {
    /** A turn, after {@link #waitTime()}. */
    GRANTED,
    /** No turn: it would have started too late; nothing was consumed. */
    REFUSED,
    /** No turn: the destination is locked out ({@link #lockoutReason()}). */
    LOCKED_OUT,
    /** The cursor's store could not be asked. */
    UNAVAILABLE
  }

  private static final Reservation REFUSED =
      new Reservation(Outcome.REFUSED, null, Duration.ZERO, null);
  private static final Reservation UNAVAILABLE =
      new Reservation(Outcome.UNAVAILABLE, null, Duration.ZERO, null);

  private final Outcome outcome;

  /** Until the turn, from the answer; negative when the turn began before the cursor answered. */
  private final Duration wait;

  private final Duration handOverLeft;
  private final String lockoutReason;

  /** The fleet's backoff multiplier the cursor applied; 0 when it keeps none. */
  private final int fleetBackoff;

  private Reservation(Outcome outcome, Duration wait, Duration handOverLeft, String lockoutReason) {
    this(outcome, wait, handOverLeft, lockoutReason, 0);
  }

  private Reservation(
      Outcome outcome,
      Duration wait,
      Duration handOverLeft,
      String lockoutReason,
      int fleetBackoff) {
    this.outcome = outcome;
    this.wait = wait;
    this.handOverLeft = handOverLeft;
    this.lockoutReason = lockoutReason;
    this.fleetBackoff = fleetBackoff;
  }

  /**
   * A turn that starts after {@code wait} (zero or positive).
   *
   * @param wait how long until the turn
   * @return the granted reservation
   */
  public static Reservation granted(Duration wait) {
    Objects.requireNonNull(wait, "wait");
    if (wait.isNegative()) {
      throw new IllegalArgumentException("wait must not be negative: " + wait);
    }
    return new Reservation(Outcome.GRANTED, wait, Duration.ZERO, null);
  }

  /**
   * Granted with a wait in nanoseconds. A negative wait is a turn that began that long before the
   * cursor answered (a reservation whose answer was slow to come back): its {@link #waitTime()} is
   * zero, and {@link #startsIn()} says how late the caller already is, so that a turn begun long
   * ago is seen as late rather than started afresh, close behind the next one.
   *
   * @param waitNanos how long until the turn; negative if it began that long ago
   * @return the granted reservation
   */
  public static Reservation grantedNanos(long waitNanos) {
    return new Reservation(Outcome.GRANTED, Duration.ofNanos(waitNanos), Duration.ZERO, null);
  }

  /**
   * The turn would start later than the caller accepts; the cursor was not advanced.
   *
   * @return the refusal
   */
  public static Reservation refused() {
    return REFUSED;
  }

  /**
   * The destination is locked out fleet-wide ({@link Cursor#lockOut}): no turn, and nothing
   * consumed, until an operator clears it.
   *
   * @param reason the reason recorded with the lockout
   * @return the lockout
   */
  public static Reservation lockedOut(String reason) {
    Objects.requireNonNull(reason, "reason");
    return new Reservation(Outcome.LOCKED_OUT, null, Duration.ZERO, reason);
  }

  /**
   * The cursor's store could not be consulted.
   *
   * @return the unavailable answer
   */
  public static Reservation unavailable() {
    return UNAVAILABLE;
  }

  /**
   * This granted turn, taken while the fleet hands over from local pacing back to the shared
   * cursor, a hand-over that ends {@code left} from the answer: until then some process may still
   * pace locally, so the caller should also pace this turn as it would locally, and wait for the
   * later of the two.
   *
   * @param left how long after the answer the hand-over ends, above zero
   * @return this turn, handed over
   */
  public Reservation duringHandOver(Duration left) {
    if (outcome != Outcome.GRANTED) {
      throw new IllegalStateException("only a granted turn is handed over: " + outcome);
    }
    Objects.requireNonNull(left, "left");
    if (left.isNegative() || left.isZero()) {
      throw new IllegalArgumentException("a hand-over must have time left: " + left);
    }
    return new Reservation(outcome, wait, left, null, fleetBackoff);
  }

  /**
   * This granted turn, spaced by the fleet's backoff {@code multiplier} that the cursor keeps
   * ({@link dev.pacer.BackoffScope#FLEET}).
   *
   * @param multiplier 1 to 16
   * @return this turn, with its multiplier
   */
  public Reservation withFleetBackoff(int multiplier) {
    if (outcome != Outcome.GRANTED) {
      throw new IllegalStateException("only a granted turn has a backoff: " + outcome);
    }
    if (multiplier < 1 || multiplier > Backoff.MAX_MULTIPLIER) {
      throw new IllegalArgumentException(
          "multiplier must be 1-" + Backoff.MAX_MULTIPLIER + ", got " + multiplier);
    }
    return new Reservation(outcome, wait, handOverLeft, null, multiplier);
  }

  /**
   * The fleet's backoff multiplier this turn was spaced by, if the cursor keeps one.
   *
   * @return the multiplier, or empty
   */
  public OptionalInt fleetBackoff() {
    return fleetBackoff == 0 ? OptionalInt.empty() : OptionalInt.of(fleetBackoff);
  }

  /**
   * Whether this turn was granted during a hand-over (see {@link #duringHandOver}).
   *
   * @return whether the caller should also pace this turn locally
   */
  public boolean isHandOver() {
    return !handOverLeft.isZero();
  }

  /**
   * How long after the answer the hand-over ends; zero when this turn was not handed over.
   *
   * @return the hand-over left
   */
  public Duration handOverLeft() {
    return handOverLeft;
  }

  /**
   * The kind of answer.
   *
   * @return the outcome
   */
  public Outcome outcome() {
    return outcome;
  }

  /**
   * Whether a turn was granted.
   *
   * @return whether the outcome is {@link Outcome#GRANTED}
   */
  public boolean isGranted() {
    return outcome == Outcome.GRANTED;
  }

  /**
   * Whether the turn would have started too late.
   *
   * @return whether the outcome is {@link Outcome#REFUSED}
   */
  public boolean isRefused() {
    return outcome == Outcome.REFUSED;
  }

  /**
   * Whether the destination is locked out.
   *
   * @return whether the outcome is {@link Outcome#LOCKED_OUT}
   */
  public boolean isLockedOut() {
    return outcome == Outcome.LOCKED_OUT;
  }

  /**
   * Why the destination is locked out, as recorded.
   *
   * @return the reason
   * @throws IllegalStateException unless locked out
   */
  public String lockoutReason() {
    if (outcome != Outcome.LOCKED_OUT) {
      throw new IllegalStateException("not locked out: reservation was " + outcome);
    }
    return lockoutReason;
  }

  /**
   * Whether the store could not be asked.
   *
   * @return whether the outcome is {@link Outcome#UNAVAILABLE}
   */
  public boolean isUnavailable() {
    return outcome == Outcome.UNAVAILABLE;
  }

  /**
   * How long the caller waits before its turn.
   *
   * @return the wait, zero or positive
   * @throws IllegalStateException unless granted: there is no wait to speak of otherwise
   */
  public Duration waitTime() {
    return startsIn().isNegative() ? Duration.ZERO : wait;
  }

  /**
   * When the turn starts, from the cursor's answer: {@link #waitTime()}, or negative if the turn
   * began before the answer (see {@link #grantedNanos}).
   *
   * @return the turn's start relative to the answer
   * @throws IllegalStateException unless granted
   */
  public Duration startsIn() {
    if (outcome != Outcome.GRANTED) {
      throw new IllegalStateException("no wait: reservation was " + outcome);
    }
    return wait;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Reservation r
        && r.outcome == outcome
        && Objects.equals(r.wait, wait)
        && r.handOverLeft.equals(handOverLeft)
        && Objects.equals(r.lockoutReason, lockoutReason)
        && r.fleetBackoff == fleetBackoff;
  }

  @Override
  public int hashCode() {
    return Objects.hash(outcome, wait, handOverLeft, lockoutReason, fleetBackoff);
  }

  @Override
  public String toString() {
    return outcome == Outcome.GRANTED
        ? "GRANTED(wait="
            + wait
            + (isHandOver() ? ", hand-over for " + handOverLeft : "")
            + (fleetBackoff == 0 ? "" : ", fleet backoff x" + fleetBackoff)
            + ")"
        : outcome == Outcome.LOCKED_OUT ? "LOCKED_OUT(" + lockoutReason + ")" : outcome.name();
  }
}
