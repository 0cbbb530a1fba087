package dev.pacer.postgres;

/**
 * Where the database's clock stands against this process's monotonic clock, learned from the
 * reservations themselves, so that a turn computed on the database's clock starts at the same
 * instant in every process, whatever each reservation's round trip cost.
 *
 * <h2>Why</h2>
 *
 * The statement answers "your turn is {@code wait} after my now", where its now is {@code
 * clock_timestamp()} at some instant between the moment the caller sent the statement and the
 * moment the answer came back. Sleeping {@code wait} from the answer starts the turn late by the
 * part of the round trip after the database read its clock; sleeping from the call starts it early
 * by the part before. On an idle machine both are tens of microseconds. On a loaded one they are
 * not, and they vary from turn to turn: each turn would start late by its own round trip, and turns
 * granted an interval apart would reach the destination much closer than that (docs/reliability.md,
 * "The ceiling at the destination's door", item 2).
 *
 * <h2>How</h2>
 *
 * Every reservation also returns the database's now. A reservation sent at local {@code a} and
 * answered at {@code b} says the database read its clock at local time {@code (a + b) / 2}, give or
 * take {@code (b - a) / 2}: one sample of the offset between the clocks, and its uncertainty. The
 * clock keeps the most certain sample, the one with the shortest round trip, NTP's minimum filter,
 * letting a sample's uncertainty grow with its age at {@link #DRIFT_PER_SECOND} so that a fresh
 * sample eventually replaces an old one. A sample that disagrees with the kept one by more than
 * both uncertainties means a clock was stepped: it replaces the kept one at once.
 *
 * <p>A turn's local start is then the database's turn mapped through the offset, and it is always
 * kept inside what the round trip itself proves: between {@code a + wait} and {@code b + wait}. A
 * wrong offset can therefore never make a turn earlier or later than sleeping from the call or from
 * the answer would, and a right one removes the round trip's noise from the fleet's spacing.
 *
 * <p>Public for a program that reads the database's clock in statements of its own (the CLI's
 * per-host claim, which takes a turn in its own statement, and its request log, which stamps
 * requests on the database's clock): one clock per process, fed by every statement that returns the
 * database's now, and all of them mapped through it. Thread-safe.
 */
public final class DatabaseClock {

  /**
   * How fast two clocks may drift apart: 100 ppm, generous for quartz (typically under 20 ppm) and
   * NTP-disciplined clocks, in nanoseconds of uncertainty per second of age.
   */
  static final long DRIFT_PER_SECOND = 100_000;

  private boolean known;

  /** The database's epoch nanoseconds minus the local monotonic nanoseconds. */
  private long offsetNanos;

  /** The kept sample's half round trip, and when (local) it was taken. */
  private long halfTripNanos;

  private long sampledAtNanos;

  /** A clock with no sample yet. */
  public DatabaseClock() {}

  /**
   * The turn's wait measured from {@code answeredNanos}, for a reservation sent at {@code
   * askedNanos} that answered "{@code waitNanos} after {@code databaseNowEpochNanos}"; negative
   * when the turn began before the answer came back. Such a turn is late by that much already, and
   * the limiter's check for late turns must see it: started at the answer instead, a turn whose
   * answer was slow would leave that much after its true start, between the next process's turns,
   * and a 1-s window could hold the ceiling + 2.
   *
   * @param askedNanos when the statement was sent, on {@link System#nanoTime()}'s clock
   * @param answeredNanos when its answer came back, on the same clock
   * @param databaseNowEpochNanos the database's now the statement read, in epoch nanoseconds
   * @param waitNanos how long after that now the turn starts, as the statement answered
   * @return nanoseconds from {@code answeredNanos} to the turn's start; negative if it began before
   *     the answer came back
   */
  public synchronized long waitFromAnswer(
      long askedNanos, long answeredNanos, long databaseNowEpochNanos, long waitNanos) {
    sample(askedNanos, answeredNanos, databaseNowEpochNanos);
    long turnLocal = databaseNowEpochNanos + waitNanos - offsetNanos;
    long earliest = askedNanos + waitNanos;
    long latest = answeredNanos + waitNanos;
    return Math.min(latest, Math.max(earliest, turnLocal)) - answeredNanos;
  }

  /**
   * Learns from a statement sent at local {@code askedNanos} and answered at {@code answeredNanos},
   * which read the database's clock as {@code databaseNowEpochNanos}.
   *
   * @param askedNanos when the statement was sent, on {@link System#nanoTime()}'s clock
   * @param answeredNanos when its answer came back, on the same clock
   * @param databaseNowEpochNanos the database's {@code clock_timestamp()} it read, in nanoseconds
   *     since the epoch
   */
  public synchronized void sample(long askedNanos, long answeredNanos, long databaseNowEpochNanos) {
    long halfTrip = Math.max(0, answeredNanos - askedNanos) / 2;
    long midpoint = askedNanos + halfTrip;
    long offset = databaseNowEpochNanos - midpoint;
    if (!known) {
      keep(offset, halfTrip, midpoint);
      return;
    }
    long keptUncertainty =
        halfTripNanos + Math.max(0, midpoint - sampledAtNanos) / 1_000_000_000L * DRIFT_PER_SECOND;
    boolean stepped = Math.abs(offset - offsetNanos) > keptUncertainty + halfTrip;
    if (stepped || halfTrip <= keptUncertainty) {
      keep(offset, halfTrip, midpoint);
    }
  }

  /**
   * Whether a sample was taken: until one is, {@link #databaseEpochNanos} has no answer.
   *
   * @return whether the offset is known
   */
  public synchronized boolean known() {
    return known;
  }

  /**
   * The database's clock at the local instant {@code localNanos}, through the kept sample's offset.
   *
   * @param localNanos an instant on {@link System#nanoTime()}'s clock
   * @return nanoseconds since the epoch on the database's clock
   * @throws IllegalStateException if no sample was taken yet
   */
  public synchronized long databaseEpochNanos(long localNanos) {
    if (!known) {
      throw new IllegalStateException("no sample of the database's clock yet");
    }
    return localNanos + offsetNanos;
  }

  private void keep(long offset, long halfTrip, long at) {
    known = true;
    offsetNanos = offset;
    halfTripNanos = halfTrip;
    sampledAtNanos = at;
  }
}
