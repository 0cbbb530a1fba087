package dev.pacer;

import dev.pacer.internal.Backoff;
import dev.pacer.internal.RateMeter;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Paces one destination for this process, against a ceiling shared by the whole fleet.
 *
 * <p>Obtain one from {@link LimiterRegistry}, which hands out exactly one per destination name per
 * process. A request goes:
 *
 * <pre>{@code
 * try (Slot slot = limiter.acquire()) {
 *   response = send(request);
 * }
 * }</pre>
 *
 * <p>{@link #acquire()} first takes one of the process's {@code maxConcurrency} permits, then
 * reserves a turn from the shared {@link Cursor} at the destination's interval times the current
 * backoff multiplier, sleeps until that turn (holding no lock and no connection), and returns the
 * slot. If the shared cursor is unavailable, the turn comes from a local cursor at the interval
 * times {@code maxFetchingProcesses}: with every process degraded at once the fleet still stays
 * under the ceiling, and no process stops (neither fail open nor fail closed).
 *
 * <p>Responses feed back through {@link #backoff()} (429/503: the interval doubles, up to 16
 * times), {@link #noteCleanResponse()} (100 in a row halve it back) and {@link #lockOut} (403:
 * every later acquire throws {@link LockedOutException}).
 */
public final class DestinationLimiter {

  private static final Logger log = LoggerFactory.getLogger(DestinationLimiter.class);
  private static final long RATE_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final Destination destination;
  private final Cursor shared;
  private final Cursor fallback;
  private final TimeSource time;
  private final Semaphore permits;
  private final Backoff backoff = new Backoff();
  private final RateMeter meter = new RateMeter(1024, RATE_WINDOW_NANOS);
  private final long baseIntervalNanos;

  private volatile String lockoutReason;
  private volatile boolean degraded;

  DestinationLimiter(Destination destination, Cursor shared, Cursor fallback, TimeSource time) {
    this.destination = destination;
    this.shared = shared;
    this.fallback = fallback;
    this.time = time;
    this.permits = new Semaphore(destination.maxConcurrency(), true);
    this.baseIntervalNanos = destination.interval().toNanos();
  }

  public Destination destination() {
    return destination;
  }

  /**
   * Blocks until this caller's turn and returns its slot; close the slot when the request is done.
   *
   * @throws LockedOutException if the destination is locked out, before or during the wait
   * @throws InterruptedException if interrupted while waiting; no permit is kept
   */
  public Slot acquire() throws InterruptedException {
    checkNotLockedOut();
    permits.acquire();
    try {
      Duration interval = currentInterval();
      Reservation turn = reserveShared(interval, null);
      if (turn.isUnavailable()) {
        turn = fallback.reserve(destination.name(), degradedInterval(interval));
      }
      return waitForTurn(turn.waitTime());
    } catch (Throwable t) {
      permits.release();
      throw t;
    }
  }

  /**
   * Takes a turn only if it starts within {@code maxWait}; otherwise returns empty and consumes
   * nothing, neither a permit nor a turn on the shared cursor.
   *
   * @throws LockedOutException if the destination is locked out
   */
  public Optional<Slot> tryAcquire(Duration maxWait) throws InterruptedException {
    checkNotLockedOut();
    long started = time.nanoTime();
    if (!permits.tryAcquire(maxWait.toNanos(), TimeUnit.NANOSECONDS)) {
      return Optional.empty();
    }
    try {
      Duration remaining = maxWait.minusNanos(time.nanoTime() - started);
      if (remaining.isNegative()) {
        remaining = Duration.ZERO;
      }
      Duration interval = currentInterval();
      Reservation turn = reserveShared(interval, remaining);
      if (turn.isUnavailable()) {
        turn = fallback.tryReserve(destination.name(), degradedInterval(interval), remaining);
      }
      if (turn.isRefused()) {
        permits.release();
        return Optional.empty();
      }
      return Optional.of(waitForTurn(turn.waitTime()));
    } catch (Throwable t) {
      permits.release();
      throw t;
    }
  }

  /** A rate-pressure response (429, 503): double the interval, up to 16 times the base. */
  public void backoff() {
    backoff.onRatePressure();
  }

  /** A clean response: after 100 in a row the backoff multiplier halves, never below 1. */
  public void noteCleanResponse() {
    backoff.onCleanResponse();
  }

  /** A lockout response (403): every later {@link #acquire()} throws. Irreversible. */
  public void lockOut(String reason) {
    if (lockoutReason == null) {
      log.error("Destination {} locked out: {}. No further requests will be made.",
          destination.name(), reason);
    }
    lockoutReason = reason == null ? "locked out" : reason;
  }

  public boolean isLockedOut() {
    return lockoutReason != null;
  }

  /** Why the destination was locked out (for example "HTTP 403 from ..."), or null if it is not. */
  public String lockoutReason() {
    return lockoutReason;
  }

  /** The current backoff multiplier on the interval: 1, 2, 4, 8 or 16. */
  public int backoffMultiplier() {
    return backoff.multiplier();
  }

  /** The interval this process currently asks the shared cursor for: base × backoff. */
  public Duration currentInterval() {
    return Duration.ofNanos(baseIntervalNanos * backoff.multiplier());
  }

  /** True while the last reservation had to be paced locally because the cursor was unavailable. */
  public boolean isDegraded() {
    return degraded;
  }

  /** The rate of turns this process achieved over the last 10 s, per second. */
  public double currentRate() {
    return meter.perSecond(time.nanoTime());
  }

  int availablePermits() {
    return permits.availablePermits();
  }

  private Reservation reserveShared(Duration interval, Duration maxWait) {
    Reservation turn;
    try {
      turn = maxWait == null
          ? shared.reserve(destination.name(), interval)
          : shared.tryReserve(destination.name(), interval, maxWait);
    } catch (RuntimeException e) {
      // A cursor must not throw; if one does anyway, pacing degrades rather than stopping.
      log.warn("Cursor {} threw instead of answering; treating it as unavailable", shared, e);
      turn = Reservation.unavailable();
    }
    noteDegraded(turn.isUnavailable());
    return turn;
  }

  private void noteDegraded(boolean nowDegraded) {
    if (nowDegraded != degraded) {
      degraded = nowDegraded;
      if (nowDegraded) {
        log.warn("Destination {}: shared cursor unavailable, pacing locally at {}/s "
                + "(ceiling {}/s divided by maxFetchingProcesses {})",
            destination.name(), destination.ratePerSecond() / destination.maxFetchingProcesses(),
            destination.ratePerSecond(), destination.maxFetchingProcesses());
      } else {
        log.info("Destination {}: shared cursor available again", destination.name());
      }
    }
  }

  private Duration degradedInterval(Duration interval) {
    return interval.multipliedBy(destination.maxFetchingProcesses());
  }

  private Slot waitForTurn(Duration wait) throws InterruptedException {
    time.sleepNanos(wait.toNanos());
    checkNotLockedOut();
    meter.record(time.nanoTime());
    return new Slot(permits);
  }

  private void checkNotLockedOut() {
    String reason = lockoutReason;
    if (reason != null) {
      throw new LockedOutException(destination.name(), reason);
    }
  }

  @Override
  public String toString() {
    return "DestinationLimiter{" + destination.name() + ", cursor=" + shared + "}";
  }
}
