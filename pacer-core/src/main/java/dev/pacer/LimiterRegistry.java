package dev.pacer;

import dev.pacer.spi.Cursor;
import dev.pacer.spi.FleetSlots;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Hands out one {@link DestinationLimiter} per destination name for this process, all pacing
 * against one shared {@link Cursor}, and holding the fleet-wide concurrency caps of the
 * destinations that have one in one {@link FleetSlots}. Asking twice for the same destination
 * returns the same limiter; asking for a name already registered with a different configuration is
 * an error, since two limiters for one destination in one process would each take a share of its
 * permits and backoff.
 *
 * <p>{@link LimiterListener}s added here ({@link #addListener}) hear every limiter the registry
 * hands out, those it already has and those it creates later: metrics are bound once per registry,
 * not per limiter.
 *
 * <p>A registry keeps every limiter it hands out until told to let go of the idle ones ({@link
 * #evictIdle}): a program that paces a few destinations never needs to, one that meets many hosts
 * (a crawler) calls it now and then, so that its memory follows the hosts it is busy with rather
 * than every host it ever met.
 */
public final class LimiterRegistry {

  private final Cursor shared;
  private final Optional<FleetSlots> fleetSlots;
  private final TimeSource time;
  private final AsyncPools pools;

  /** When the shared cursor was first found unavailable, for every limiter asking it. */
  private final CursorOutage outage = new CursorOutage();

  private final ConcurrentMap<String, DestinationLimiter> limiters = new ConcurrentHashMap<>();

  /**
   * Limiters evicted and not yet collected, by name, under the registry's lock. One asked for again
   * while anything still holds it comes back rather than being made afresh: a destination never has
   * two limiters in one process.
   */
  private final Map<String, Evicted> evicted = new HashMap<>();

  private final ReferenceQueue<DestinationLimiter> collected = new ReferenceQueue<>();
  private final Listeners listeners = new Listeners();

  /** An evicted limiter, until the collector finds nothing else holds it. */
  private static final class Evicted extends WeakReference<DestinationLimiter> {
    private final String name;

    Evicted(DestinationLimiter limiter, ReferenceQueue<DestinationLimiter> queue) {
      super(limiter, queue);
      this.name = limiter.destination().name();
    }
  }

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
    this(shared, Optional.empty(), time, AsyncPools.defaults());
  }

  /**
   * As {@link #LimiterRegistry(Cursor, TimeSource)}, with {@link DestinationLimiter#acquireAsync()}
   * waiting and making its round trips on {@code pools} rather than {@link AsyncPools#defaults()}.
   *
   * @param shared the cursor every limiter paces against
   * @param time the local clock
   * @param pools where acquireAsync waits and makes its round trips
   */
  public LimiterRegistry(Cursor shared, TimeSource time, AsyncPools pools) {
    this(shared, Optional.empty(), time, pools);
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
    this(shared, fleetSlots, time, AsyncPools.defaults());
  }

  /**
   * As {@link #LimiterRegistry(Cursor, FleetSlots, TimeSource)}, with {@code pools} for
   * acquireAsync.
   *
   * @param shared the cursor every limiter paces against
   * @param fleetSlots where fleet-wide caps are held
   * @param time the local clock
   * @param pools where acquireAsync waits and makes its round trips
   */
  public LimiterRegistry(Cursor shared, FleetSlots fleetSlots, TimeSource time, AsyncPools pools) {
    this(shared, Optional.of(Objects.requireNonNull(fleetSlots, "fleet slots")), time, pools);
  }

  private LimiterRegistry(
      Cursor shared, Optional<FleetSlots> fleetSlots, TimeSource time, AsyncPools pools) {
    this.shared = Objects.requireNonNull(shared, "shared cursor");
    this.fleetSlots = fleetSlots;
    this.time = Objects.requireNonNull(time, "time");
    this.pools = Objects.requireNonNull(pools, "async pools");
  }

  /**
   * The limiter for {@code destination}, created on first use, and again after an eviction once
   * nothing holds the evicted one.
   *
   * @param destination the destination
   * @return its limiter, the same one for every call with that configuration
   * @throws IllegalArgumentException if a different configuration is registered under its name, or
   *     the destination caps its concurrency fleet-wide and this registry has no fleet slots
   */
  public DestinationLimiter limiter(Destination destination) {
    DestinationLimiter limiter = limiters.get(destination.name());
    if (limiter == null) {
      limiter = takeBackOrCreate(destination);
    }
    if (!limiter.destination().equals(destination)) {
      throw new IllegalArgumentException(
          "destination "
              + destination.name()
              + " is already registered with a different"
              + " configuration: registered "
              + limiter.destination()
              + ", requested "
              + destination);
    }
    return limiter;
  }

  /**
   * Adds {@code listener}: it hears at once of every limiter handed out so far ({@link
   * LimiterListener#limiterCreated}), and from now on of their events and of every limiter created
   * later. Events before this call are not replayed.
   *
   * @param listener the listener, called on the threads that cause the events
   */
  public synchronized void addListener(LimiterListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"), List.copyOf(limiters.values()));
  }

  /**
   * Whether the shared cursor is latched as unavailable just now ({@link Cursor#isLatched()}):
   * every limiter of this registry then paces locally.
   *
   * @return whether the cursor is latched
   */
  public boolean isCursorLatched() {
    return shared.isLatched();
  }

  /**
   * Lets go of every limiter idle for at least {@code idleFor}, and tells the listeners ({@link
   * LimiterListener#limiterEvicted}). Idle means that nothing the limiter knows still matters: no
   * caller holds, waits for or is asking for a turn; no lockout, pause or hand-over is in force; no
   * backoff kept only in this process ({@link BackoffScope#PROCESS}) is above 1; and the last
   * permit came back, and the last turn the fleet may have queued after this process's last look at
   * the cursor began, at least {@code idleFor} ago. A limiter made afresh for the destination then
   * reads back from the cursor everything that bears on the ceiling, a pause or a lockout recorded
   * since included; what it forgets is this process's counters, rate meter and late-turn count,
   * and, under {@link BackoffScope#FLEET}, the clean answers heard since its last turn (the fleet's
   * backoff halves later, never sooner). See {@code docs/reliability.md}.
   *
   * <p>A caller that kept an evicted limiter may go on using it: its next call has the registry
   * take it back, and the registry hands out that same limiter until nothing holds it any more. Its
   * memory goes once nothing does, its destination's entry in the cursor's listeners included
   * ({@link Cursor#unlisten}).
   *
   * @param idleFor how long a limiter must have been idle; zero evicts every limiter idle now
   * @return how many limiters were evicted
   * @throws IllegalArgumentException if {@code idleFor} is negative
   */
  public synchronized int evictIdle(Duration idleFor) {
    if (idleFor.isNegative()) {
      throw new IllegalArgumentException("idleFor must not be negative, got " + idleFor);
    }
    long idleNanos = idleFor.toNanos();
    dropCollected();
    int count = 0;
    for (Iterator<DestinationLimiter> all = limiters.values().iterator(); all.hasNext(); ) {
      DestinationLimiter limiter = all.next();
      if (limiter.evictIfIdle(idleNanos)) {
        // Held weakly before it leaves: whatever the cursor or a listener does next, the limiter
        // is found again while anything holds it.
        evicted.put(limiter.destination().name(), new Evicted(limiter, collected));
        all.remove();
        count++;
        listeners.limiterEvicted(limiter);
        limiter.stopListening();
      }
    }
    return count;
  }

  /**
   * The limiter of {@code destination}: an evicted one if anything still holds it, else a new one,
   * told to the listeners; under the registry's lock, so that a listener being added meanwhile
   * hears of it exactly once.
   */
  private synchronized DestinationLimiter takeBackOrCreate(Destination destination) {
    DestinationLimiter existing = limiters.get(destination.name());
    if (existing != null) {
      return existing;
    }
    dropCollected();
    Evicted gone = evicted.remove(destination.name());
    DestinationLimiter held = gone == null ? null : gone.get();
    if (held != null) {
      takeBack(held);
      return held;
    }
    DestinationLimiter limiter =
        new DestinationLimiter(
            destination,
            shared,
            FleetCap.of(destination, fleetSlots, time),
            outage,
            time,
            pools,
            listeners,
            this::takeBack);
    limiter.startListening();
    listeners.limiterCreated(limiter);
    limiters.put(destination.name(), limiter);
    return limiter;
  }

  /**
   * Holds {@code limiter} again after an eviction: asked for by its destination, or called by a
   * caller that kept it. Nothing else can hold its name meanwhile: a new limiter is made only once
   * nothing holds the evicted one.
   */
  private synchronized void takeBack(DestinationLimiter limiter) {
    String name = limiter.destination().name();
    boolean wasEvicted = limiters.get(name) != limiter;
    if (wasEvicted) {
      evicted.remove(name);
      limiters.put(name, limiter);
    }
    // Open before anything is called out to: a call waiting to begin must not wait on a cursor.
    limiter.reopen();
    if (wasEvicted) {
      listeners.limiterCreated(limiter);
      limiter.startListening();
    }
  }

  /** Forgets the evicted limiters the collector has found nothing else held. */
  private void dropCollected() {
    for (Object ref; (ref = collected.poll()) != null; ) {
      Evicted gone = (Evicted) ref;
      evicted.remove(gone.name, gone);
    }
  }
}
