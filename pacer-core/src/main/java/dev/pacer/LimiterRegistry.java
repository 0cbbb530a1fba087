package dev.pacer;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Hands out one {@link DestinationLimiter} per destination name for this process, all pacing
 * against one shared {@link Cursor}, and holding the fleet-wide concurrency caps of the
 * destinations that have one in one {@link FleetSlots}. Asking twice for the same destination returns the same
 * limiter; asking for a name already registered with a different configuration is an error, since
 * two limiters for one destination in one process would each take a share of its permits and
 * backoff.
 */
public final class LimiterRegistry {

  private final Cursor shared;
  private final Optional<FleetSlots> fleetSlots;
  private final TimeSource time;
  private final ConcurrentMap<String, DestinationLimiter> limiters = new ConcurrentHashMap<>();

  /**
   * A registry pacing against {@code shared}, on the system clock.
   *
   * @param shared the cursor every limiter paces against
   */
  public LimiterRegistry(Cursor shared) {
    this(shared, TimeSource.SYSTEM);
  }

  /**
   * A registry pacing against {@code shared}, with local time (degraded pacing, sleeps) from {@code
   * time}.
   *
   * @param shared the cursor every limiter paces against
   * @param time the local clock
   */
  public LimiterRegistry(Cursor shared, TimeSource time) {
    this(shared, Optional.empty(), time);
  }

  /**
   * A registry pacing against {@code shared} and holding fleet-wide concurrency caps in {@code
   * fleetSlots}, on the system clock. Destinations without a cap never touch {@code fleetSlots}.
   *
   * @param shared the cursor every limiter paces against
   * @param fleetSlots where fleet-wide caps are held
   */
  public LimiterRegistry(Cursor shared, FleetSlots fleetSlots) {
    this(shared, fleetSlots, TimeSource.SYSTEM);
  }

  /**
   * As {@link #LimiterRegistry(Cursor, FleetSlots)}, with local time from {@code time}.
   *
   * @param shared the cursor every limiter paces against
   * @param fleetSlots where fleet-wide caps are held
   * @param time the local clock
   */
  public LimiterRegistry(Cursor shared, FleetSlots fleetSlots, TimeSource time) {
    this(shared, Optional.of(Objects.requireNonNull(fleetSlots, "fleet slots")), time);
  }

  private LimiterRegistry(Cursor shared, Optional<FleetSlots> fleetSlots, TimeSource time) {
    this.shared = Objects.requireNonNull(shared, "shared cursor");
    this.fleetSlots = fleetSlots;
    this.time = Objects.requireNonNull(time, "time");
  }

  /**
   * The limiter for {@code destination}, created on first use.
   *
   * @param destination the destination
   * @return its limiter, the same one for every call with that configuration
   * @throws IllegalArgumentException if a different configuration is registered under its name,
   *     or the destination caps its concurrency fleet-wide and this registry has no fleet slots
   */
  public DestinationLimiter limiter(Destination destination) {
    DestinationLimiter limiter =
        limiters.computeIfAbsent(
            destination.name(), name -> new DestinationLimiter(destination, shared,
                FleetCap.of(destination, fleetSlots, time), time));
    if (!limiter.destination().equals(destination)) {
      throw new IllegalArgumentException(
          "destination " + destination.name() + " is already registered with a different"
              + " configuration: registered " + limiter.destination() + ", requested "
              + destination);
    }
    return limiter;
  }
}
