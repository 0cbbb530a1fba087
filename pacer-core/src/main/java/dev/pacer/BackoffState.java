package dev.pacer;

import dev.pacer.internal.Backoff;
import dev.pacer.spi.Cursor;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A limiter's backoff multiplier: this process's own ({@link BackoffScope#PROCESS}), or the fleet's
 * as the cursor keeps it ({@link BackoffScope#FLEET}), last seen with a reservation or a
 * rate-pressure answer; while the cursor is unavailable, the last multiplier seen doubles here.
 */
final class BackoffState {

  private final Backoff backoff = new Backoff();
  private final boolean fleetScope;

  /** Under {@link BackoffScope#FLEET}: the fleet's multiplier as the cursor last answered it. */
  private final AtomicInteger fleetMultiplier = new AtomicInteger(1);

  /** Under {@link BackoffScope#FLEET}: clean answers not yet reported with a reservation. */
  private final AtomicInteger cleanSinceReservation = new AtomicInteger();

  BackoffState(BackoffScope scope) {
    this.fleetScope = scope == BackoffScope.FLEET;
  }

  boolean isFleet() {
    return fleetScope;
  }

  /** The multiplier in force: 1, 2, 4, 8 or 16. */
  int multiplier() {
    return fleetScope ? fleetMultiplier.get() : backoff.multiplier();
  }

  /** Whether this process's own multiplier is above 1 (never under the fleet's scope). */
  boolean isOwnBackedOff() {
    return !fleetScope && backoff.multiplier() > 1;
  }

  /**
   * A rate-pressure answer: doubles this process's multiplier, or the fleet's on {@code shared}.
   * Returns the multiplier now in force.
   */
  int onRatePressure(Cursor shared, String name) {
    if (!fleetScope) {
      backoff.onRatePressure();
      return backoff.multiplier();
    }
    OptionalInt recorded = shared.throttled(name);
    if (recorded.isPresent()) {
      fleetMultiplier.set(recorded.getAsInt());
    } else {
      fleetMultiplier.updateAndGet(Backoff::doubled);
    }
    return fleetMultiplier.get();
  }

  /** A clean answer: counted here, or under the fleet's scope with the next reservation. */
  void onCleanResponse() {
    if (fleetScope) {
      cleanSinceReservation.incrementAndGet();
    } else {
      backoff.onCleanResponse();
    }
  }

  /** The clean answers to report with a reservation under the fleet's backoff; now reported. */
  int takeClean() {
    return cleanSinceReservation.getAndSet(0);
  }

  /** Clean answers a reservation could not report, to report with the next. */
  void returnClean(int clean) {
    cleanSinceReservation.addAndGet(clean);
  }

  /** The fleet's multiplier as a granted reservation carried it. */
  void fleetAnswered(int multiplier) {
    fleetMultiplier.set(multiplier);
  }
}
