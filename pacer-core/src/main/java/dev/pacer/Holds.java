package dev.pacer;

import dev.pacer.spi.Cursor;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What holds a destination's turns: a pause the destination asked for ({@code Retry-After}), which
 * holds every turn until it ends, and a lockout, which refuses every turn for good. Both come from
 * an answer heard in this process or from the cursor, which hands on what other processes heard.
 */
final class Holds {

  private static final Logger log = LoggerFactory.getLogger(DestinationLimiter.class);

  /** {@link #pausedUntil()} when no pause was ever asked for. */
  static final long NO_PAUSE = Long.MIN_VALUE;

  private final Destination destination;
  private final LimiterListener listener;
  private final TimeSource time;

  /** Until when (local clock) the destination asked the fleet to pause; NO_PAUSE if never. */
  private final AtomicLong pausedUntil = new AtomicLong(NO_PAUSE);

  private final AtomicLong turnsHeldForPause = new AtomicLong();
  private final Object lockoutLock = new Object();
  private volatile String lockoutReason;

  Holds(Destination destination, LimiterListener listener, TimeSource time) {
    this.destination = destination;
    this.listener = listener;
    this.time = time;
  }

  /** What the cursor tells of the pauses and lockouts other processes heard. */
  Cursor.Listener cursorListener() {
    return new Cursor.Listener() {
      @Override
      public void paused(Duration left) {
        // What the cursor hands on comes from rows other roles may write: capped like a
        // Retry-After heard here.
        Duration capped = capped(left);
        if (capped.isNegative() || capped.isZero()) {
          return;
        }
        holdUntil(time.nanoTime() + capped.toNanos());
      }

      @Override
      public void lockedOut(String reason) {
        noteLockout(reason);
      }
    };
  }

  /** {@code delay}, at most the destination's {@code maxRetryAfter}. */
  Duration capped(Duration delay) {
    return delay.compareTo(destination.maxRetryAfter()) > 0 ? destination.maxRetryAfter() : delay;
  }

  /** Holds every turn until {@code localNanos}, unless a pause already lasts longer. */
  void holdUntil(long localNanos) {
    pausedUntil.accumulateAndGet(
        localNanos, (current, next) -> current == NO_PAUSE || next - current > 0 ? next : current);
  }

  /** Where the last pause ends on the local clock, or {@link #NO_PAUSE}. */
  long pausedUntil() {
    return pausedUntil.get();
  }

  /** Counts a granted turn not taken because a pause began after it was granted. */
  void countTurnHeld() {
    turnsHeldForPause.incrementAndGet();
  }

  long turnsHeldForPause() {
    return turnsHeldForPause.get();
  }

  Duration pauseLeft() {
    long until = pausedUntil.get();
    long left = until == NO_PAUSE ? 0 : until - time.nanoTime();
    return Duration.ofNanos(Math.max(0, left));
  }

  /** Records a lockout; returns whether it is new. */
  boolean noteLockout(String reason) {
    synchronized (lockoutLock) {
      if (lockoutReason != null) {
        return false;
      }
      lockoutReason = reason;
    }
    log.error(
        "Destination {} locked out: {}. No further requests will be made.",
        destination.name(),
        reason);
    listener.lockedOut(destination.name(), reason);
    return true;
  }

  /** The lockout's reason, or null if the destination is not locked out. */
  String lockoutReason() {
    return lockoutReason;
  }

  void checkNotLockedOut() {
    String reason = lockoutReason;
    if (reason != null) {
      throw new LockedOutException(destination.name(), reason);
    }
  }
}
