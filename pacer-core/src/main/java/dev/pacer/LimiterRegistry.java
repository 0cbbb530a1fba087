package dev.pacer;

import java.util.List;
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
 *
 * <p>{@link LimiterListener}s added here ({@link #addListener}) hear every limiter the registry
 * hands out, those it already has and those it creates later: metrics are bound once per registry,
 * not per limiter.
 */
public final class LimiterRegistry {

  private final Cursor shared;
  private final Optional<FleetSlots> fleetSlots;
  private final TimeSource time;
  private final ConcurrentMap<String, DestinationLimiter> limiters = new ConcurrentHashMap<>();
  private final Listeners listeners = new Listeners();

  /** A registry pacing against {@code shared}, on the system clock. */
  public LimiterRegistry(Cursor shared) {
    this(shared, TimeSource.SYSTEM);
  }

  /** A registry pacing against {@code shared}, with local time (degraded pacing, sleeps) from {@code time}. */
  public LimiterRegistry(Cursor shared, TimeSource time) {
    this(shared, Optional.empty(), time);
  }

  /**
   * A registry pacing against {@code shared} and holding fleet-wide concurrency caps in {@code
   * fleetSlots}, on the system clock. Destinations without a cap never touch {@code fleetSlots}.
   */
  public LimiterRegistry(Cursor shared, FleetSlots fleetSlots) {
    this(shared, fleetSlots, TimeSource.SYSTEM);
  }

  /** As {@link #LimiterRegistry(Cursor, FleetSlots)}, with local time from {@code time}. */
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
   * @throws IllegalArgumentException if a different configuration is registered under its name,
   *     or the destination caps its concurrency fleet-wide and this registry has no fleet slots
   */
  public DestinationLimiter limiter(Destination destination) {
    DestinationLimiter limiter = limiters.get(destination.name());
    if (limiter == null) {
      limiter = create(destination);
    }
    if (!limiter.destination().equals(destination)) {
      throw new IllegalArgumentException(
          "destination " + destination.name() + " is already registered with a different"
              + " configuration: registered " + limiter.destination() + ", requested "
              + destination);
    }
    return limiter;
  }

  /**
   * Adds {@code listener}: it hears at once of every limiter handed out so far ({@link
   * LimiterListener#limiterCreated}), and from now on of their events and of every limiter created
   * later. Events before this call are not replayed.
   */
  public synchronized void addListener(LimiterListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"), List.copyOf(limiters.values()));
  }

  /**
   * Whether the shared cursor is latched as unavailable just now ({@link Cursor#isLatched()}):
   * every limiter of this registry then paces locally.
   */
  public boolean isCursorLatched() {
    return shared.isLatched();
  }

  /**
   * Creates the limiter of a destination not seen before, and tells the listeners; under the
   * registry's lock, so that a listener being added meanwhile hears of it exactly once.
   */
  private synchronized DestinationLimiter create(Destination destination) {
    DestinationLimiter existing = limiters.get(destination.name());
    if (existing != null) {
      return existing;
    }
    DestinationLimiter limiter = new DestinationLimiter(destination, shared,
        FleetCap.of(destination, fleetSlots, time), time, listeners);
    listeners.limiterCreated(limiter);
    limiters.put(destination.name(), limiter);
    return limiter;
  }
}
