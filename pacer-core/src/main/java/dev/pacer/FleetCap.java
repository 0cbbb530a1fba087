package dev.pacer;

import dev.pacer.spi.FleetSlots;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A limiter's hold on its destination's fleet-wide concurrency cap: the slot a request holds from
 * before its turn until its {@link Slot} is closed.
 *
 * <p>A destination without the cap is {@link #UNCAPPED}: nothing is asked of any store, so its
 * requests cost no extra round trip. A capped one waits for one of the {@code n} slots of {@link
 * FleetSlots}:
 *
 * <ul>
 *   <li><b>Taken</b>: the slot is held until the request is done, then given back.
 *   <li><b>Full</b>: the caller polls again after {@value #FIRST_POLL_MILLIS} ms, doubling each
 *       time up to {@value #MAX_POLL_MILLIS} ms. A slot given back anywhere in the fleet is
 *       therefore taken again within {@value #MAX_POLL_MILLIS} ms by one of the waiters, in no
 *       particular order: waiters are not queued fleet-wide. Polling rather than a notification
 *       keeps the store's side one statement with no session to keep; 14 waiters of a fleet at the
 *       longest spacing make 350 statements a second, each a primary-key update or nothing.
 *   <li><b>Unavailable</b> (the store cannot be asked): the request takes one of this process's
 *       {@link #localShare} permits instead: {@code n ÷ maxFetchingProcesses}, rounded down, at
 *       least 1. With every process degraded at once, the fleet has at most {@code n} in flight, as
 *       long as {@code maxFetchingProcesses} is honest; the "at least 1" is the one exception (more
 *       processes than slots), which chooses progress over the cap. While those permits are all in
 *       use the caller polls as for a full set, and asks the store again each time, which costs
 *       nothing while the database's outage policy holds it down.
 * </ul>
 *
 * <p>Requests already holding a fleet slot when the store goes away keep it until they finish, and
 * requests holding a local permit when it comes back keep theirs: for the length of one request
 * around each transition, a process may have its local share in flight on top of its slots.
 *
 * <p>Worked example, 4 slots, {@code maxFetchingProcesses} 3: the local share is 4 ÷ 3 = 1. While
 * the database is away each of the 3 processes sends one request at a time: 3 in flight, under 4.
 * With 10 slots it is 3 each (9); with 2 slots it is 1 each (3 in flight, over 2: the exception).
 */
interface FleetCap {

  long FIRST_POLL_MILLIS = 5;
  long MAX_POLL_MILLIS = 40;

  /** What a request holds: a fleet slot, a local permit, or nothing for an uncapped destination. */
  interface Held {
    void release();
  }

  /** What a request to an uncapped destination holds. */
  Held UNCAPPED_HELD = () -> {};

  /** No cap: every take is granted at once, with no store asked. */
  FleetCap UNCAPPED =
      new FleetCap() {
        @Override
        public Held take() {
          return UNCAPPED_HELD;
        }

        @Override
        public Optional<Held> takeBy(long deadlineNanos) {
          return Optional.of(UNCAPPED_HELD);
        }

        @Override
        public Optional<Held> tryTakeNow() {
          return Optional.of(UNCAPPED_HELD);
        }
      };

  /** Waits for a slot, however long. */
  Held take() throws InterruptedException;

  /** Waits for a slot until {@code deadlineNanos} on the limiter's clock; empty if none by then. */
  Optional<Held> takeBy(long deadlineNanos) throws InterruptedException;

  /**
   * One attempt, without waiting: a slot (or, while the store is unavailable, a local permit) if
   * one is free now. At most one round trip. {@link #take} is these attempts at the poll spacing of
   * {@link #nextPollNanos}, with the caller asleep between them; {@link
   * DestinationLimiter#acquireAsync()} makes the same attempts with no thread waiting between.
   */
  Optional<Held> tryTakeNow();

  /** The spacing of the first poll for a slot. */
  static long firstPollNanos() {
    return TimeUnit.MILLISECONDS.toNanos(FIRST_POLL_MILLIS);
  }

  /** The spacing of the poll after one spaced {@code pollNanos}: doubled, up to the maximum. */
  static long nextPollNanos(long pollNanos) {
    return Math.min(pollNanos * 2, TimeUnit.MILLISECONDS.toNanos(MAX_POLL_MILLIS));
  }

  /**
   * The cap of {@code destination} held in {@code slots}, or {@link #UNCAPPED} if it has none.
   *
   * @throws IllegalArgumentException if the destination is capped and there is nowhere to hold it
   */
  static FleetCap of(Destination destination, Optional<FleetSlots> slots, TimeSource time) {
    if (destination.maxConcurrencyFleetWide().isEmpty()) {
      return UNCAPPED;
    }
    FleetSlots store =
        slots.orElseThrow(
            () ->
                new IllegalArgumentException(
                    "destination "
                        + destination.name()
                        + " caps its concurrency fleet-wide, but the registry was given no"
                        + " FleetSlots to hold the cap in"));
    return new Polling(destination, store, time);
  }

  /** The permits a process uses while the store is unavailable: n ÷ processes, at least 1. */
  static int localShare(int slots, int maxFetchingProcesses) {
    return Math.max(1, slots / maxFetchingProcesses);
  }

  /** The cap of one destination, polled for in a {@link FleetSlots}. */
  final class Polling implements FleetCap {

    private static final Logger log = LoggerFactory.getLogger(FleetCap.class);

    private final String name;
    private final int slots;
    private final FleetSlots store;
    private final TimeSource time;
    private final Semaphore localPermits;
    private final int localShare;
    private final AtomicBoolean degraded = new AtomicBoolean();

    Polling(Destination destination, FleetSlots store, TimeSource time) {
      this.name = destination.name();
      this.slots = destination.maxConcurrencyFleetWide().getAsInt();
      this.store = store;
      this.time = time;
      this.localShare = localShare(slots, destination.maxFetchingProcesses());
      this.localPermits = new Semaphore(localShare);
    }

    @Override
    public Held take() throws InterruptedException {
      return poll(false, 0).orElseThrow();
    }

    @Override
    public Optional<Held> takeBy(long deadlineNanos) throws InterruptedException {
      return poll(true, deadlineNanos);
    }

    private Optional<Held> poll(boolean bounded, long deadline) throws InterruptedException {
      long pollNanos = firstPollNanos();
      while (true) {
        Optional<Held> held = tryTakeNow();
        if (held.isPresent()) {
          return held;
        }
        long left = deadline - time.nanoTime();
        if (bounded && left <= 0) {
          return Optional.empty();
        }
        time.sleepNanos(bounded ? Math.min(pollNanos, left) : pollNanos);
        pollNanos = nextPollNanos(pollNanos);
      }
    }

    @Override
    public Optional<Held> tryTakeNow() {
      FleetSlots.Claim claim = store.tryTake(name, slots);
      switch (claim.outcome()) {
        case TAKEN -> {
          noteDegraded(false);
          FleetSlots.Lease lease = claim.lease();
          return Optional.of(lease::giveBack);
        }
        case UNAVAILABLE -> {
          noteDegraded(true);
          if (localPermits.tryAcquire()) {
            return Optional.of(localPermits::release);
          }
        }
        case FULL -> noteDegraded(false);
      }
      return Optional.empty();
    }

    private void noteDegraded(boolean now) {
      if (degraded.compareAndSet(!now, now)) {
        if (now) {
          log.warn(
              "Destination {}: fleet slots unavailable; at most {} request(s) in flight from"
                  + " this process ({} fleet-wide slots divided by maxFetchingProcesses)",
              name,
              localShare,
              slots);
        } else {
          log.info("Destination {}: fleet slots available again", name);
        }
      }
    }
  }
}
