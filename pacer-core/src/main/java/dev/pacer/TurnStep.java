package dev.pacer;

/**
 * One step of taking a turn, as {@link DestinationLimiter} computes it: wait on the clock, make a
 * round trip to a store, or the outcome. The turn-taking (hand-overs, degraded pacing, the pause,
 * late turns, backoff) is written once, as a chain of these steps; two drivers run it.
 *
 * <ul>
 *   <li>{@link #runBlocking}, for {@link DestinationLimiter#acquire()}: the calling thread sleeps
 *       each {@link Wait} on the limiter's {@link TimeSource} and makes each {@link RoundTrip}
 *       itself, exactly as a loop with sleeps would.
 *   <li>{@code AsyncAcquisition}, for {@link DestinationLimiter#acquireAsync()}: a {@link Wait} is
 *       a task scheduled on a scheduler (no thread is held while it lasts), and a {@link RoundTrip}
 *       runs on a small executor, the only place where a step may block.
 * </ul>
 *
 * <p>The split is a promise of the step functions: the continuation of a {@link Wait} does no I/O
 * and takes no lock for longer than some arithmetic, since the asynchronous driver runs it on the
 * scheduler's thread; everything that asks the cursor or the fleet's slots is behind a {@link
 * RoundTrip}. A step function may throw ({@link LockedOutException}, or whatever a bug throws):
 * each driver then gives back what the acquisition holds.
 */
sealed interface TurnStep {

  /** What to do next; may throw. */
  @FunctionalInterface
  interface Next {
    TurnStep run();
  }

  /** Wait {@code nanos} (none if not positive) on the limiter's clock, then go on. */
  record Wait(long nanos, Next then) implements TurnStep {}

  /** Go on with a step that asks a store (the cursor, the fleet's slots): it may block on I/O. */
  record RoundTrip(Next then) implements TurnStep {}

  /** The turn has begun: the caller may send now. */
  record Granted(Slot slot) implements TurnStep {}

  /** No turn within the caller's deadline; nothing is held for it on the cursor. */
  record Refused() implements TurnStep {}

  static TurnStep waitThen(long nanos, Next then) {
    return new Wait(nanos, then);
  }

  static TurnStep roundTrip(Next then) {
    return new RoundTrip(then);
  }

  /**
   * Runs {@code first} and the steps it leads to on the calling thread, sleeping on {@code time};
   * returns the slot granted, or null if refused.
   */
  static Slot runBlocking(Next first, TimeSource time) throws InterruptedException {
    TurnStep step = first.run();
    while (true) {
      if (step instanceof Wait wait) {
        time.sleepNanos(wait.nanos());
        step = wait.then().run();
      } else if (step instanceof RoundTrip trip) {
        step = trip.then().run();
      } else if (step instanceof Granted granted) {
        return granted.slot();
      } else {
        return null;
      }
    }
  }
}
