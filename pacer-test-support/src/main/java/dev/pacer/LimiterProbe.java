package dev.pacer;

/** What tests in other packages (and child JVMs) read of a limiter that is not its API. */
public final class LimiterProbe {

  private LimiterProbe() {}

  /** Permits not held by a slot nor handed to a waiter. */
  public static int availablePermits(DestinationLimiter limiter) {
    return limiter.availablePermits();
  }

  /** Callers queued for a permit. */
  public static int permitsWaiting(DestinationLimiter limiter) {
    return limiter.permitsWaiting();
  }
}
