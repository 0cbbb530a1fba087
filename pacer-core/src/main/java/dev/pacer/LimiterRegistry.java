package dev.pacer;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Hands out one {@link DestinationLimiter} per destination name for this process, all pacing
 * against one shared {@link Cursor}. Asking twice for the same destination returns the same
 * limiter; asking for a name already registered with a different configuration is an error, since
 * two limiters for one destination in one process would each take a share of its permits and
 * backoff.
 */
public final class LimiterRegistry {

  private final Cursor shared;
  private final TimeSource time;
  private final ConcurrentMap<String, DestinationLimiter> limiters = new ConcurrentHashMap<>();

  /** A registry pacing against {@code shared}, on the system clock. */
  public LimiterRegistry(Cursor shared) {
    this(shared, TimeSource.SYSTEM);
  }

  /** A registry pacing against {@code shared}, with local time (degraded pacing, sleeps) from {@code time}. */
  public LimiterRegistry(Cursor shared, TimeSource time) {
    this.shared = Objects.requireNonNull(shared, "shared cursor");
    this.time = Objects.requireNonNull(time, "time");
  }

  /**
   * The limiter for {@code destination}, created on first use.
   *
   * @throws IllegalArgumentException if a different configuration is registered under its name
   */
  public DestinationLimiter limiter(Destination destination) {
    DestinationLimiter limiter =
        limiters.computeIfAbsent(
            destination.name(), name -> new DestinationLimiter(destination, shared, time));
    if (!limiter.destination().equals(destination)) {
      throw new IllegalArgumentException(
          "destination " + destination.name() + " is already registered with a different"
              + " configuration: registered " + limiter.destination() + ", requested "
              + destination);
    }
    return limiter;
  }
}
