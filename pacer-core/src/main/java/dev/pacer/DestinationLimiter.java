package dev.pacer;

import dev.pacer.internal.Backoff;
import dev.pacer.internal.Pacing;
import dev.pacer.internal.RateMeter;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
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
 * <p>{@link #acquire()} first takes one of the process's {@code maxConcurrency} permits, then,
 * for a destination with {@code maxConcurrencyFleetWide}, one of the fleet's slots (see {@code
 * FleetCap}: before the turn, because a turn held while waiting for a slot would go stale), then
 * reserves a turn from the shared {@link Cursor} at the destination's interval times the current
 * backoff multiplier, sleeps until that turn (holding no lock and no connection), and returns the
 * slot. If the shared cursor is unavailable, the turn comes from a local cursor at the interval
 * times the processes that may be fetching: the larger of {@code
 * maxFetchingProcesses} and the count the cursor gave with the last shared turn ({@link
 * Cursor#fetchingProcesses}), so that with every process degraded at once the fleet still stays
 * under the ceiling, a fleet larger than configured too, and no process stops (neither fail open
 * nor fail closed). The two hand-overs
 * are guarded too: the first local turn waits for the turns the fleet may still hold on the shared
 * cursor, a locally paced turn that ends after the cursor came back also takes a shared turn, and
 * a shared turn granted during a hand-over ({@link Reservation#isHandOver()}: until the retry
 * boundary after the return, when another process may still pace locally) waits for its local
 * turn first and then takes its shared turn again, so it starts at the later of the two. Until the
 * hand-over's end, later turns pace locally first and take one shared turn; a local wait never
 * outlasts the hand-over, so the fleet is back at the full rate as soon as it ends.
 *
 * <p>Responses feed back through {@link #backoff()} (429/503: the interval doubles, up to 16
 * times), {@link #noteCleanResponse()} (100 in a row halve it back) and {@link #lockOut} (403:
 * every later acquire throws {@link LockedOutException}).
 *
 * <p>What the limiter does is told to the {@link LimiterListener}s of its registry: each turn
 * (shared, degraded or refused) and how long it took, each rate-pressure answer, a lockout.
 *
 * <p><b>Without a thread per waiter.</b> {@link #acquireAsync()} takes the same turn with no
 * thread waiting for it. The turn-taking above is written once, as a chain of {@link TurnStep}s,
 * each a wait of so many nanoseconds, a round trip to the cursor or the fleet's slots, or the
 * outcome; {@link #acquire()} sleeps through the waits on the {@link TimeSource}, and {@link
 * #acquireAsync()} schedules them on the registry's {@link AsyncPools}, making the round trips on
 * its small executor. The permits are one first-come-first-served queue for both kinds of caller.
 * A fleet slot is claimed by the same attempts {@code FleetCap} makes for a blocked caller, each
 * on the executor, with the poll's spacing scheduled between them rather than slept: a full fleet
 * ties up no thread, and a claim that blocks on JDBC blocks an executor thread for one round trip,
 * as a reservation does.
 *
 * <p><b>Virtual threads.</b> {@link #acquire()} on a virtual thread leaves its carrier whenever it
 * waits: for a permit it parks on a future (no monitor held), for its turn it sleeps, and the
 * round trips go through {@code PostgresCursor}, which guards its connection with a {@code
 * ReentrantLock}, and pgjdbc (42.6 and later guard the connection with locks, not {@code
 * synchronized}). The {@code synchronized} blocks of this class ({@code degradedLock}, {@code
 * lockoutLock}), of the rate meter and of the permit queue hold only arithmetic, never a wait: on
 * JDK 21 to 23, where a virtual thread blocked inside {@code synchronized} pins its carrier, none
 * can block there. From JDK 24 a virtual thread blocked in {@code synchronized} no longer pins at
 * all. {@code VirtualThreadsTest} (pacer-postgres) runs 10,000 virtual threads at 100/s on a real
 * cursor, each sending through {@code PacedHttpClient}'s blocking {@code send} with nothing warmed
 * but the client's {@code warmUp} and one opening request, on the oldest JDK of 21 or later it
 * finds, and counts JFR's {@code jdk.VirtualThreadPinned} events: none. A virtual thread meeting a
 * class that another is loading pins for that once, a JDK matter, so {@code Permits} meets the
 * classes of a waiter's giving up before any waiter can. Where that JDK is 24
 * or later (Temurin 25 in CI), the test cannot see a {@code synchronized} block that blocks, and
 * the paragraph above is what rules one out on 21 to 23.
 */
public final class DestinationLimiter {

  private static final Logger log = LoggerFactory.getLogger(DestinationLimiter.class);
  private static final long RATE_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final Destination destination;
  private static final long NO_DEADLINE = Long.MIN_VALUE;
  private static final PacedTurn NO_TURN =
      new PacedTurn(Long.MIN_VALUE, LimiterListener.Outcome.REFUSED);
  private static final long NO_HAND_OVER = Long.MIN_VALUE;
  private static final long NO_PAUSE = Long.MIN_VALUE;
  private static final long MIN_LATE_LIMIT_NANOS = 1_000_000;

  private final Cursor shared;
  private final FleetCap fleetCap;
  private final LimiterListener listener;
  private final TimeSource time;
  private final AsyncPools pools;
  private final Permits permits;
  private final Backoff backoff = new Backoff();
  private final boolean fleetScope;
  /** Under {@link BackoffScope#FLEET}: the fleet's multiplier as the cursor last answered it. */
  private final AtomicInteger fleetMultiplier = new AtomicInteger(1);
  /** Under {@link BackoffScope#FLEET}: clean answers not yet reported with a reservation. */
  private final AtomicInteger cleanSinceReservation = new AtomicInteger();
  private final RateMeter meter = new RateMeter(1024, RATE_WINDOW_NANOS);
  private final long baseIntervalNanos;
  /**
   * The processes the cursor counted with the last shared turn ({@link Cursor#fetchingProcesses}),
   * 0 if it counted none. Kept through an outage: the processes it counted pace locally beside
   * this one for as long as it lasts.
   */
  private final AtomicInteger processesSeen = new AtomicInteger();
  /** Where this process last saw the shared cursor, on the local clock. */
  private final AtomicLong sharedHorizon = new AtomicLong(Pacing.NO_CURSOR);
  private final Object degradedLock = new Object();
  /** The local cursor used while the shared one is unavailable. */
  private long degradedCursor = Pacing.NO_CURSOR;

  /** Where the last hand-over the cursor reported ends, on the local clock. */
  private volatile long handOverEnds = NO_HAND_OVER;
  private final AtomicLong lateTurnsSkipped = new AtomicLong();
  /** Until when (local clock) the destination asked the fleet to pause; NO_PAUSE if never. */
  private final AtomicLong pausedUntil = new AtomicLong(NO_PAUSE);
  private final AtomicLong turnsHeldForPause = new AtomicLong();
  private final Object lockoutLock = new Object();
  private volatile String lockoutReason;
  private volatile boolean degraded;
  /** What this limiter is told of the cursor's pauses and lockouts by. */
  private final Cursor.Listener holds;
  private final EvictionGuard eviction;

  DestinationLimiter(Destination destination, Cursor shared, FleetCap fleetCap, TimeSource time,
      AsyncPools pools, LimiterListener listener, Consumer<DestinationLimiter> takeBack) {
    this.destination = destination;
    this.listener = listener;
    this.shared = shared;
    this.fleetCap = fleetCap;
    this.time = time;
    this.pools = pools;
    this.permits = new Permits(destination.maxConcurrency(), time);
    this.eviction = new EvictionGuard(() -> takeBack.accept(this));
    this.baseIntervalNanos = destination.interval().toNanos();
    this.fleetScope = destination.backoffScope() == BackoffScope.FLEET;
    if (fleetScope && !shared.keepsFleetBackoff()) {
      throw new IllegalArgumentException("destination " + destination.name() + ": backoffScope"
          + " FLEET needs a cursor that keeps the fleet's backoff multiplier, and " + shared
          + " keeps none (the key/value table layout has nowhere to keep it without changing"
          + " the row format); use Pacer's own table, or backoffScope PROCESS");
    }
    this.holds = new Cursor.Listener() {
      @Override
      public void paused(Duration left) {
        // What the cursor hands on comes from rows other roles may write: capped like a
        // Retry-After heard here.
        Duration capped = left.compareTo(destination.maxRetryAfter()) > 0
            ? destination.maxRetryAfter() : left;
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

  /** Hears the pauses and lockouts the cursor announces: from creation, and once taken back. */
  void startListening() {
    shared.listen(destination.name(), holds);
  }

  /** Evicted: the cursor need no longer tell this limiter anything. */
  void stopListening() {
    shared.unlisten(destination.name(), holds);
  }

  /**
   * Marks this limiter evicted if it has been idle for {@code idleNanos}: no caller holds, waits
   * for or is asking for a turn; it is not locked out; no pause or hand-over is in force; its
   * backoff, if this process's own ({@link BackoffScope#PROCESS}), is back at 1; and the last
   * instant anything it knows matters (the last permit given back, the end of a pause or a
   * hand-over, its local cursor, and where it last saw the shared cursor plus the turns the rest of
   * the fleet may have queued after it) lies at least {@code idleNanos} in the past. A limiter made
   * afresh for the destination then paces exactly as this one would: everything else it knows is
   * the cursor's, read back at its first reservation, and a hold the cursor announces meanwhile is
   * the cursor's too. What it does not know again: its counters and rate meter (the rate reads 0
   * after 10 idle seconds anyway), and under {@link BackoffScope#FLEET} the clean answers not yet
   * reported (the fleet's backoff halves a little later, never sooner) and the fleet's multiplier
   * until its first reservation answers (a first reservation that finds the cursor unavailable
   * paces at the destination's divided rate without it: under the ceiling, as a process started
   * then would). Called by the registry, under its lock.
   */
  boolean evictIfIdle(long idleNanos) {
    return eviction.evictIf(() -> isIdleFor(idleNanos));
  }

  /** Taken back by its registry after an eviction. */
  void reopen() {
    eviction.reopen();
  }

  private boolean isIdleFor(long idleNanos) {
    OptionalLong allIn = permits.allInSince();
    if (allIn.isEmpty() || lockoutReason != null || (!fleetScope && backoff.multiplier() > 1)) {
      return false;
    }
    long last = allIn.getAsLong();
    long pause = pausedUntil.get();
    if (pause != NO_PAUSE) {
      last = later(last, pause);
    }
    long handOver = handOverEnds;
    if (handOver != NO_HAND_OVER) {
      last = later(last, handOver);
    }
    long horizon = sharedHorizon.get();
    if (horizon != Pacing.NO_CURSOR) {
      last = later(last,
          horizon + saturatedProduct(currentInterval().toNanos(), fleetPendingTurns()));
    }
    synchronized (degradedLock) {
      if (degradedCursor != Pacing.NO_CURSOR) {
        last = later(last, degradedCursor);
      }
    }
    return time.nanoTime() - last >= idleNanos;
  }

  private static long later(long a, long b) {
    return b - a > 0 ? b : a;
  }

  /**
   * The destination this limiter paces.
   *
   * @return the destination
   */
  public Destination destination() {
    return destination;
  }

  /**
   * Blocks until this caller's turn and returns its slot; close the slot when the request is done.
   *
   * @return the turn's slot, to close when the request is done
   * @throws LockedOutException if the destination is locked out, before or during the wait
   * @throws InterruptedException if interrupted while waiting; no permit is kept
   */
  public Slot acquire() throws InterruptedException {
    return acquire(1);
  }

  /**
   * Like {@link #acquire()}, for a request that takes {@code intervals} turns: it goes at the
   * first, and the next request anywhere in the fleet comes {@code intervals} intervals later.
   * For a request that may leave late for a reason no warm-up removes, such as this process's
   * first connection to the destination: its lateness then falls into its own margin instead of
   * onto the next turn.
   *
   * @param intervals how many turns the request takes, 1 to 16
   * @return the turn's slot, to close when the request is done
   * @throws IllegalArgumentException if {@code intervals} is not 1 to 16
   * @throws LockedOutException if the destination is locked out, before or during the wait
   * @throws InterruptedException if interrupted while waiting; no permit is kept
   */
  public Slot acquire(int intervals) throws InterruptedException {
    if (intervals < 1 || intervals > 16) {
      throw new IllegalArgumentException("intervals must be 1-16, got " + intervals);
    }
    eviction.enter();
    try {
      long called = time.nanoTime();
      checkNotLockedOut();
      permits.acquire();
      FleetCap.Held fleetSlot;
      try {
        fleetSlot = fleetCap.take();
      } catch (Throwable t) {
        permits.release();
        throw t;
      }
      return turnHolding(fleetSlot, called, NO_DEADLINE, intervals);
    } finally {
      eviction.exit();
    }
  }

  /**
   * {@link #acquire()} without a thread waiting: the future completes with the slot at the turn
   * (close the slot when the request is done, as with {@link #acquire()}). The permit is queued
   * with the blocked callers', first come first served. The round trips (the reservation on the
   * cursor, a fleet slot's claim) run on the registry's {@link AsyncPools round-trip executor},
   * and every wait (for the turn, for a pause's end, between polls for a fleet slot) is a task on
   * its scheduler, whose thread completes the future: see {@link AsyncPools} for what a dependent
   * stage may do there. The turn is the one {@link #acquire()} would have had, by the same steps
   * (degraded pacing, hand-overs, a pause holding a granted turn, a late turn given up, backoff).
   *
   * <p>Cancelling the future before the turn gives back the permit, or the place in its queue,
   * and a fleet slot already taken. A turn already reserved on the shared cursor cannot be given
   * back: the cursor has moved past it, and the fleet's next turn comes an interval after it
   * whether or not a request uses it (as for a caller of {@link #acquire()} interrupted in its
   * wait).
   *
   * @return a future that completes with the slot; exceptionally with {@link LockedOutException}
   *     if the destination is locked out, before or during the wait, and with whatever the pools
   *     throw if they refuse work (shut down); in every such case nothing is kept
   */
  public CompletableFuture<Slot> acquireAsync() {
    return startAsync(null);
  }

  /**
   * {@link #acquireAsync()}, the turn granted on {@code grantOn}: each wait's end, and with it the
   * check for a turn woken too late for, runs on that executor, and completes the future there.
   * Give it the executor the request is sent on, and send in a stage added without {@code
   * ...Async} ({@code thenCompose}, {@code handle}): the request then leaves on the thread that
   * judged the turn in time, as with {@link #acquire()}, and a busy executor that runs the task
   * late has its turn given up and another taken instead of its request sent late, unseen.
   * ({@code PacedHttpClient#sendAsync} does so.)
   *
   * @param grantOn where the turn is granted
   * @return as {@link #acquireAsync()}; also exceptionally with what {@code grantOn} throws if it
   *     refuses the task
   */
  public CompletableFuture<Slot> acquireAsync(Executor grantOn) {
    return startAsync(Objects.requireNonNull(grantOn, "grantOn"));
  }

  /** An asynchronous acquisition whose waits end on {@code grantOn}, or the scheduler's thread. */
  private CompletableFuture<Slot> startAsync(Executor grantOn) {
    // Once started, the acquisition holds a permit or its place in the queue, and no eviction
    // can take the limiter from under it.
    eviction.enter();
    try {
      String reason = lockoutReason;
      if (reason != null) {
        return CompletableFuture.failedFuture(new LockedOutException(destination.name(), reason));
      }
      long called = time.nanoTime();
      return AsyncAcquisition.start(permits, pools, grantOn,
          took -> fleetSlotThenTurn(called, FleetCap.firstPollNanos(), took));
    } finally {
      eviction.exit();
    }
  }

  /**
   * The asynchronous path's fleet slot, claimed by the attempts {@link FleetCap#take} makes, at
   * its poll spacing but with no thread asleep between them; then the turn.
   */
  private TurnStep fleetSlotThenTurn(long called, long pollNanos,
      Consumer<FleetCap.Held> took) {
    return TurnStep.roundTrip(() -> {
      checkNotLockedOut();
      Optional<FleetCap.Held> held = fleetCap.tryTakeNow();
      if (held.isEmpty()) {
        return TurnStep.waitThen(pollNanos,
            () -> fleetSlotThenTurn(called, FleetCap.nextPollNanos(pollNanos), took));
      }
      took.accept(held.get());
      return nextTurn(called, NO_DEADLINE, 1);
    });
  }

  /**
   * Takes a turn only if it starts within {@code maxWait}; otherwise returns empty and consumes
   * nothing, neither a permit, a fleet slot, nor a turn on the shared cursor.
   *
   * @param maxWait the latest start accepted, from now
   * @return the turn's slot, or empty if the turn would start later
   * @throws LockedOutException if the destination is locked out
   * @throws InterruptedException if interrupted while waiting; no permit is kept
   */
  public Optional<Slot> tryAcquire(Duration maxWait) throws InterruptedException {
    eviction.enter();
    try {
      checkNotLockedOut();
      long called = time.nanoTime();
      long deadline = called + maxWait.toNanos();
      if (!permits.tryAcquire(maxWait.toNanos())) {
        return refused(called);
      }
      Optional<FleetCap.Held> fleetSlot;
      try {
        fleetSlot = fleetCap.takeBy(deadline);
      } catch (Throwable t) {
        permits.release();
        throw t;
      }
      if (fleetSlot.isEmpty()) {
        permits.release();
        return refused(called);
      }
      return Optional.ofNullable(turnHolding(fleetSlot.get(), called, deadline, 1));
    } finally {
      eviction.exit();
    }
  }

  /** {@link #takeTurn}, with {@code fleetSlot} given back unless it goes out with the slot. */
  private Slot turnHolding(FleetCap.Held fleetSlot, long called, long deadline, int intervals)
      throws InterruptedException {
    Slot slot;
    try {
      slot = takeTurn(called, deadline, intervals);
    } catch (Throwable t) {
      fleetSlot.release();
      throw t;
    }
    if (slot == null) {
      fleetSlot.release();
      return null;
    }
    return slot.holding(fleetSlot);
  }

  /**
   * With a permit held, waits for a turn that starts by {@code deadline} and returns its slot, or
   * releases the permit and returns null if there is none. The permit is released on any throw.
   */
  private Slot takeTurn(long called, long deadline, int intervals) throws InterruptedException {
    try {
      Slot slot = TurnStep.runBlocking(() -> nextTurn(called, deadline, intervals), time);
      return slot == null ? refuse(called) : slot;
    } catch (Throwable t) {
      permits.release();
      throw t;
    }
  }

  /**
   * The steps to one turn that starts by {@code deadline}, for both {@link #acquire} (which sleeps
   * through them) and {@link #acquireAsync} (which schedules them): see {@link TurnStep}.
   *
   * <p>A turn this caller wakes for later than {@link #lateLimitNanos} after its start is given
   * up and another one taken: a request sent late would leave close behind the next turn's, and
   * the destination would see two requests where the ceiling allows one. Kept to less than an
   * interval late, no 1-s window at the destination holds more than the ceiling + 1 (a window
   * then covers turns from at most 1 s + the limit, under ceiling + 1 intervals). On a machine so
   * busy that sleeps end an interval late (measured: 56 and 64 ms late, three worker JVMs starting
   * on two cores), a skipped turn costs the run one interval, never the ceiling.
   */
  private TurnStep nextTurn(long called, long deadline, int intervals) {
    Duration interval = currentInterval();
    return waitForTurn(interval.multipliedBy(intervals),
        Duration.ofNanos(baseIntervalNanos).multipliedBy(intervals), deadline,
        turn -> takeOrRetry(turn, called, interval, deadline, intervals));
  }

  private TurnStep takeOrRetry(PacedTurn turn, long called, Duration interval, long deadline,
      int intervals) {
    if (turn == NO_TURN) {
      return new TurnStep.Refused();
    }
    long turnStart = turn.start();
    long pauseEnds = pausedUntil.get();
    if (pauseEnds != NO_PAUSE && pauseEnds - turnStart > 0) {
      // The destination asked for a pause after this turn was granted: it is not taken, the caller
      // waits until the pause ends and asks again (the cursor's own turns already lie after it).
      turnsHeldForPause.incrementAndGet();
      long left = pauseEnds - time.nanoTime();
      TurnStep.Next again = () -> {
        checkNotLockedOut();
        return nextTurn(called, deadline, intervals);
      };
      return left > 0 ? TurnStep.waitThen(left, again) : again.run();
    }
    // The check reads the clock after everything the grant hands over is built: a process's
    // first grant loads the classes of its slot, its hand-over and its event for the listeners
    // (measured, with a lambda's linking: 1.1 to 1.3 ms in a fresh JVM on a quiet machine, up to
    // 6.8 ms at the first turns of two fresh JVMs of four threads at 200/s), and time spent after
    // the check makes the request late unseen, close behind the next turn (see FirstGrantTest).
    long grantedAt = time.nanoTime();
    LimiterListener.Turn told = new LimiterListener.Turn(destination.name(), turn.outcome(),
        Duration.ofNanos(grantedAt - called));
    TurnStep.Granted handOver = new TurnStep.Granted(new Slot(permits, turnStart));
    long late = time.nanoTime() - turnStart;
    if (late <= lateLimitNanos(interval)) {
      meter.record(grantedAt);
      listener.turn(told);
      return handOver;
    }
    long skipped = lateTurnsSkipped.incrementAndGet();
    if (Long.bitCount(skipped) == 1) {
      log.warn("Destination {}: a turn was given up because this process woke {} ms after it"
              + " began (limit {} ms): a late request would arrive close behind the next one."
              + " {} turn(s) given up so far; a busy host slows the run, not the ceiling",
          destination.name(), late / 1_000_000, lateLimitNanos(interval) / 1_000_000,
          skipped);
    }
    return nextTurn(called, deadline, intervals);
  }

  /**
   * Half the interval, and at least {@link #MIN_LATE_LIMIT_NANOS}: a sleep cannot end more
   * precisely than that, and without the floor turns of a few hundred microseconds would be given
   * up over ordinary wake-up jitter. Above 500 requests/s the bound at the door is therefore the
   * ceiling plus the turns of a millisecond, not the ceiling + 1.
   */
  private static long lateLimitNanos(Duration interval) {
    return Math.max(interval.toNanos() / 2, MIN_LATE_LIMIT_NANOS);
  }

  /** A turn's start (local clock), and whether it was shared or paced locally. */
  private record PacedTurn(long start, LimiterListener.Outcome outcome) {}

  /**
   * The cursor's answer and the instant its call returned, from which a granted wait counts (see
   * {@link Cursor}): the turn starts at {@code at + wait}, however long this thread takes to get
   * from the answer to the wait.
   */
  private record SharedAnswer(Reservation turn, long at) {}

  /** What follows the wait for a turn: the turn, or NO_TURN. */
  @FunctionalInterface
  private interface AtTurn {
    TurnStep at(PacedTurn turn);
  }

  /**
   * Waits until a turn that starts by {@code deadline} and goes on {@code then} with its start, or
   * NO_TURN. {@code interval} is the spacing at the backoff this process knows; {@code base}, the
   * spacing without backoff, is what a cursor that keeps the fleet's backoff is asked for.
   */
  private TurnStep waitForTurn(Duration interval, Duration base, long deadline, AtTurn then) {
    // During a hand-over this process already knows of, the local turn comes first and the shared
    // turn is taken once, at the instant the request leaves.
    return paceLocallyDuringHandOver(interval, pacedLocally -> reserving(interval, base, deadline,
        answer -> {
          Reservation turn = answer.turn();
          if (turn.isLockedOut()) {
            noteLockout(turn.lockoutReason());
            checkNotLockedOut();
          }
          if (!turn.isUnavailable()) {
            return afterSharedAnswer(answer, pacedLocally, interval, base, deadline, then);
          }
          long localNow = time.nanoTime();
          long localWait = degradedWait(interval, deadline, localNow, true);
          if (localWait < 0) {
            return then.at(NO_TURN);
          }
          return TurnStep.waitThen(localWait, () -> {
            checkNotLockedOut();
            // If the cursor answers again by now, this turn also takes a shared one, so that turns
            // granted locally never add to the fleet's once coordination is back.
            long localTurn = localNow + localWait;
            return reserving(interval, base, deadline, again -> again.turn().isUnavailable()
                ? then.at(new PacedTurn(localTurn, LimiterListener.Outcome.DEGRADED))
                : afterSharedAnswer(again, true, interval, base, deadline, then));
          });
        }));
  }

  private TurnStep afterSharedAnswer(SharedAnswer answer, boolean pacedLocally, Duration interval,
      Duration base, long deadline, AtTurn then) {
    Reservation turn = answer.turn();
    if (turn.isGranted() && turn.isHandOver() && !pacedLocally) {
      // The first news of a hand-over: the shared turn is taken again after the local one, so
      // that it holds the instant the request leaves. A shared turn held from before the local
      // wait would be in the past by then, and once the hand-over ends the turns still waiting
      // locally would add to the new shared ones.
      return paceLocallyDuringHandOver(interval, paced -> reserving(interval, base, deadline,
          again -> again.turn().isUnavailable()
              ? then.at(new PacedTurn(time.nanoTime(), LimiterListener.Outcome.DEGRADED))
              : untilSharedTurn(again, then)));
    }
    return untilSharedTurn(answer, then);
  }

  private TurnStep untilSharedTurn(SharedAnswer answer, AtTurn then) {
    Reservation turn = answer.turn();
    if (turn.isLockedOut()) {
      noteLockout(turn.lockoutReason());
      checkNotLockedOut();
    }
    if (turn.isRefused()) {
      return then.at(NO_TURN);
    }
    // The wait counts from the cursor's answer, not from now: a thread held up on its way here
    // would otherwise start its turn that much late, unseen by the check for late turns, and
    // close behind the next turn (on two busy cores, 1 or 2 of 600 reservations reached here 5 to
    // 12 ms after the PostgreSQL cursor's answer, and 102 turns fell in one second at 100/s).
    // A turn that began before the answer came back starts in the past: the check for late turns
    // must see how late it already is (at 100/s with 10,000 virtual threads on two cores, answers
    // reached their callers up to 8 ms after their turns had begun, and a turn restarted at the
    // answer fell 2-3 ms before the next one: 102 in one second at the door).
    long turnStart = answer.at() + turn.startsIn().toNanos();
    return TurnStep.waitThen(turnStart - time.nanoTime(), () -> {
      checkNotLockedOut();
      return then.at(new PacedTurn(turnStart, LimiterListener.Outcome.SHARED));
    });
  }

  /** {@link #reserveShared}, behind a round trip: what the asynchronous path runs on its executor. */
  private TurnStep reserving(Duration interval, Duration base, long deadline,
      Function<SharedAnswer, TurnStep> then) {
    return TurnStep.roundTrip(() -> then.apply(reserveShared(interval, base, deadline)));
  }

  /** What follows the local pacing of a hand-over: whether it paced. */
  @FunctionalInterface
  private interface AfterPacing {
    TurnStep paced(boolean pacedLocally);
  }

  /**
   * While a hand-over lasts, waits until this process's next local turn, but no later than the
   * hand-over's end: until then another process may still pace locally, so this one paces no
   * faster than locally too; after it, every process is back on the shared cursor, and a turn
   * still waiting locally would only hold the fleet below the ceiling. Goes on with whether it
   * paced.
   */
  private TurnStep paceLocallyDuringHandOver(Duration interval, AfterPacing then) {
    long end = handOverEnds;
    long now = time.nanoTime();
    if (end == NO_HAND_OVER || end - now <= 0) {
      return then.paced(false);
    }
    long left = end - now;
    return TurnStep.waitThen(Math.min(left, degradedWait(interval, NO_DEADLINE, now, false)), () -> {
      checkNotLockedOut();
      return then.paced(true);
    });
  }

  /**
   * Turns given up because this process woke too late for them.
   *
   * @return the number of turns skipped
   */
  public long lateTurnsSkipped() {
    return lateTurnsSkipped.get();
  }

  /**
   * Feeds one answer from the destination back into its pacing, and says what it was: a
   * {@linkplain Destination#lockoutStatusCodes() lockout status} locks the destination out
   * ({@link #lockOut}, with the reason "HTTP status from {@code source}"); a {@linkplain
   * Destination#backoffStatusCodes() backoff status} backs off, and with a {@code Retry-After}
   * (delta-seconds or an HTTP-date, read against this limiter's wall clock) pauses the fleet
   * ({@link #backoff(Duration)}); any other status is a clean response ({@link
   * #noteCleanResponse()}).
   *
   * @param status the answer's HTTP status
   * @return what the answer was taken for
   * @param retryAfter the answer's {@code Retry-After} header, or null if it has none; a value
   *     that is neither form is ignored and the status's own backoff still applies
   * @param source what was asked for (a URL), named in the lockout's reason
   */
  public Answer noteAnswer(int status, String retryAfter, Object source) {
    if (destination.lockoutStatusCodes().contains(status)) {
      lockOut("HTTP " + status + " from " + LockoutReasons.withoutSecrets(source));
      return Answer.LOCKED_OUT;
    }
    if (destination.backoffStatusCodes().contains(status)) {
      Optional<Duration> pause = RetryAfter.parse(retryAfter, Instant.ofEpochMilli(time.epochMillis()));
      if (pause.isPresent()) {
        backoff(pause.get());
      } else {
        backoff();
      }
      return Answer.THROTTLED;
    }
    noteCleanResponse();
    return Answer.CLEAN;
  }

  /**
   * A rate-pressure response (429, 503): double the interval, up to 16 times the base: this
   * process's ({@link BackoffScope#PROCESS}), or the whole fleet's through the cursor ({@link
   * BackoffScope#FLEET}; while the cursor is unavailable, the last multiplier seen doubles here).
   */
  public void backoff() {
    eviction.enter();
    try {
      if (!fleetScope) {
        backoff.onRatePressure();
        listener.throttled(destination.name(), backoff.multiplier());
        return;
      }
      OptionalInt recorded = shared.throttled(destination.name());
      if (recorded.isPresent()) {
        fleetMultiplier.set(recorded.getAsInt());
      } else {
        fleetMultiplier.accumulateAndGet(2,
            (m, factor) -> Math.min(Backoff.MAX_MULTIPLIER, m * factor));
      }
      listener.throttled(destination.name(), fleetMultiplier.get());
    } finally {
      eviction.exit();
    }
  }

  /**
   * A clean response: after 100 in a row the backoff multiplier halves, never below 1 (under
   * {@link BackoffScope#FLEET}, 100 anywhere in the fleet: counted with the next reservation).
   */
  public void noteCleanResponse() {
    eviction.enter();
    try {
      if (fleetScope) {
        cleanSinceReservation.incrementAndGet();
      } else {
        backoff.onCleanResponse();
      }
    } finally {
      eviction.exit();
    }
  }

  /**
   * A rate-pressure response that says how long to wait ({@code Retry-After}): doubles the
   * interval as {@link #backoff()} does, and pauses the fleet for {@code retryAfter} (see {@link
   * #pause}).
   *
   * @param retryAfter how long the destination asked the fleet to wait
   */
  public void backoff(Duration retryAfter) {
    backoff();
    pause(retryAfter);
  }

  /**
   * Holds every turn to this destination, in every process that shares the cursor, for {@code
   * delay} from now (at most {@link Destination#maxRetryAfter()}): this process at once, a turn
   * already granted but not yet begun included; the others as soon as the cursor tells them.
   * Requests already sent are not recalled.
   *
   * @param delay how long from now every turn is held
   */
  public void pause(Duration delay) {
    Duration capped = delay.compareTo(destination.maxRetryAfter()) > 0
        ? destination.maxRetryAfter() : delay;
    if (capped.isNegative() || capped.isZero()) {
      return;
    }
    eviction.enter();
    try {
      holdUntil(time.nanoTime() + capped.toNanos());
    } finally {
      eviction.exit();
    }
    boolean shared = this.shared.pause(destination.name(), capped);
    log.warn("Destination {} asked for a pause of {} ms{}; {}", destination.name(),
        capped.toMillis(), capped.equals(delay) ? "" : " (capped from " + delay.toMillis() + " ms)",
        shared ? "every limiter sharing the cursor holds its turns until it ends"
            : "only this process knows of it (the cursor could not record it)");
  }

  /**
   * A lockout response (403): every later {@link #acquire()} throws, here at once and in every
   * process that shares the cursor, and new limiters for the destination refuse from their first
   * reservation until an operator clears it ({@link Cursor#clearLockout}). Irreversible in this
   * limiter.
   *
   * @param reason why, as the operator will read it; null says only "locked out"
   */
  public void lockOut(String reason) {
    String recorded = reason == null ? "locked out" : LockoutReasons.bounded(reason);
    boolean first;
    eviction.enter();
    try {
      first = noteLockout(recorded);
    } finally {
      eviction.exit();
    }
    if (first && !shared.lockOut(destination.name(), recorded)) {
      log.error("Destination {}: the cursor did not record the lockout; processes started later"
          + " will not know of it", destination.name());
    }
  }

  /** Records a lockout in this limiter; returns whether it is new. */
  private boolean noteLockout(String reason) {
    synchronized (lockoutLock) {
      if (lockoutReason != null) {
        return false;
      }
      lockoutReason = reason;
    }
    log.error("Destination {} locked out: {}. No further requests will be made.",
        destination.name(), reason);
    listener.lockedOut(destination.name(), reason);
    return true;
  }

  private void holdUntil(long localNanos) {
    pausedUntil.accumulateAndGet(localNanos,
        (current, next) -> current == NO_PAUSE || next - current > 0 ? next : current);
  }

  /**
   * Turns granted before a pause and not taken because of it.
   *
   * @return the number of turns held
   */
  public long turnsHeldForPause() {
    return turnsHeldForPause.get();
  }

  /**
   * How long the pause the destination asked for still lasts; zero if none is in force.
   *
   * @return the pause left
   */
  public Duration pauseLeft() {
    long until = pausedUntil.get();
    long left = until == NO_PAUSE ? 0 : until - time.nanoTime();
    return Duration.ofNanos(Math.max(0, left));
  }

  /**
   * Whether the destination is locked out, here or anywhere in the fleet as far as this process has
   * heard.
   *
   * @return whether every further turn is refused
   */
  public boolean isLockedOut() {
    return lockoutReason != null;
  }

  /**
   * Why the destination was locked out (for example "HTTP 403 from ..."), or null if it is not.
   *
   * @return the reason, or null
   */
  public String lockoutReason() {
    return lockoutReason;
  }

  /**
   * The current backoff multiplier on the interval: 1, 2, 4, 8 or 16.
   *
   * @return the multiplier
   */
  public int backoffMultiplier() {
    return fleetScope ? fleetMultiplier.get() : backoff.multiplier();
  }

  /**
   * The spacing of this process's turns: base × backoff (under {@link BackoffScope#FLEET}, the
   * fleet's multiplier as last seen).
   *
   * @return the interval now in force
   */
  public Duration currentInterval() {
    return Duration.ofNanos(baseIntervalNanos * backoffMultiplier());
  }

  /**
   * True while the last reservation had to be paced locally because the cursor was unavailable.
   *
   * @return whether this process is pacing alone
   */
  public boolean isDegraded() {
    return degraded;
  }

  /**
   * The rate of turns this process achieved over the last 10 s, per second.
   *
   * @return turns per second
   */
  public double currentRate() {
    return meter.perSecond(time.nanoTime());
  }

  /**
   * The clock this limiter paces on, the one {@link Slot#turnNanos()} is read on: an HTTP client
   * integration measures a request's lateness on it.
   *
   * @return the limiter's time source
   */
  public TimeSource time() {
    return time;
  }

  int availablePermits() {
    return permits.available();
  }

  /** Callers queued for a permit, blocked or asynchronous. */
  int permitsWaiting() {
    return permits.waiting();
  }

  private SharedAnswer reserveShared(Duration interval, Duration base, long deadline) {
    long before = time.nanoTime();
    long horizon = sharedHorizon.get();
    // If the cursor was lost or reset, the turns granted before are still on their way: up to
    // where this process last saw the cursor, and at most the rest of the fleet's pending turns
    // beyond that. A restarted cursor starts after them.
    Duration notBefore = Duration.ofNanos(horizon == Pacing.NO_CURSOR
        ? 0
        : Math.max(0, horizon + saturatedProduct(interval.toNanos(), fleetPendingTurns()) - before));
    Reservation turn;
    Duration maxWait =
        deadline == NO_DEADLINE ? null : Duration.ofNanos(Math.max(0, deadline - before));
    int clean = 0;
    try {
      if (fleetScope) {
        clean = cleanSinceReservation.getAndSet(0);
        turn = shared.reserveUnderFleetBackoff(destination.name(), base, notBefore, maxWait, clean);
      } else {
        turn = maxWait == null
            ? shared.reserve(destination.name(), interval, notBefore)
            : shared.tryReserve(destination.name(), interval, notBefore, maxWait);
      }
    } catch (RuntimeException e) {
      // A cursor must not throw; if one does anyway, pacing degrades rather than stopping.
      log.warn("Cursor {} threw instead of answering; treating it as unavailable", shared, e);
      turn = Reservation.unavailable();
    }
    long answered = time.nanoTime();
    if (fleetScope && !turn.isGranted()) {
      cleanSinceReservation.addAndGet(clean);
    }
    if (turn.isGranted()) {
      Duration spaced = interval;
      if (turn.fleetBackoff().isPresent()) {
        fleetMultiplier.set(turn.fleetBackoff().getAsInt());
        spaced = base.multipliedBy(turn.fleetBackoff().getAsInt());
      }
      processesSeen.set(shared.fetchingProcesses(destination.name()).orElse(0));
      long cursorAfter = answered + turn.startsIn().toNanos() + spaced.toNanos();
      sharedHorizon.accumulateAndGet(cursorAfter, Math::max);
      if (turn.isHandOver()) {
        handOverEnds = answered + turn.handOverLeft().toNanos();
      }
    }
    noteDegraded(turn.isUnavailable());
    return new SharedAnswer(turn, answered);
  }

  /**
   * The wait for a turn paced locally, or -1 if it would start after {@code deadline}.
   *
   * <p>Locally the interval is multiplied by the {@linkplain #degradeDivisor processes that may be
   * fetching}. The first local turn after coordination is lost also waits until every turn the
   * fleet may still hold on the shared cursor has passed: other processes hold at most (processes -
   * 1) x maxConcurrency of them, queued after the last cursor position this process saw. Without that, local turns would
   * start while the shared queue still drains, and the fleet would briefly run at twice the
   * ceiling. A turn taken during a hand-over ({@code afterFleetQueue} false) holds a shared turn
   * as well, so it only keeps to the local spacing.
   */
  private long degradedWait(Duration interval, long deadline, long now, boolean afterFleetQueue) {
    long intervalNanos = interval.toNanos();
    synchronized (degradedLock) {
      long horizon = sharedHorizon.get();
      long fleetQueueEnd = horizon == Pacing.NO_CURSOR || !afterFleetQueue
          ? Pacing.NO_CURSOR
          : horizon + saturatedProduct(intervalNanos, fleetPendingTurns());
      long stored = Math.max(degradedCursor, fleetQueueEnd);
      long localInterval = saturatedProduct(intervalNanos, fetchingProcesses());
      Pacing.Turn turn = deadline == NO_DEADLINE
          ? Pacing.reserve(stored, now, localInterval)
          : Pacing.reserveWithin(stored, now, localInterval, Math.max(0, deadline - now));
      if (turn == null) {
        return -1;
      }
      degradedCursor = turn.newCursor();
      return turn.waitNanos();
    }
  }

  /**
   * How many processes a degraded process divides the ceiling by: {@code configured} ({@code
   * maxFetchingProcesses}), or the processes the cursor saw taking turns if more, counted to at
   * most {@link Destination#MOST_PROCESSES_COUNTED}. A count of 0 (none seen) or below the
   * configured value never lowers it, and a count from a foreign row cannot slow a process beyond
   * the cap.
   *
   * @param configured the destination's {@code maxFetchingProcesses}, at least 1
   * @param seen the processes the cursor counted, 0 if none
   * @return the divisor, at least {@code configured}
   */
  private static int degradeDivisor(int configured, int seen) {
    return Math.max(configured, Math.min(seen, Destination.MOST_PROCESSES_COUNTED));
  }

  /** The processes that may be fetching the destination now: see {@link #degradeDivisor}. */
  private int fetchingProcesses() {
    return degradeDivisor(destination.maxFetchingProcesses(), processesSeen.get());
  }

  /** The turns the rest of the fleet may hold queued: each other process's permits. */
  private long fleetPendingTurns() {
    return (long) (fetchingProcesses() - 1) * destination.maxConcurrency();
  }

  private static long saturatedProduct(long a, long b) {
    long high = Math.multiplyHigh(a, b);
    long low = a * b;
    return (high == 0 && low >= 0) ? low : Long.MAX_VALUE / 4;
  }

  private void noteDegraded(boolean nowDegraded) {
    if (nowDegraded != degraded) {
      degraded = nowDegraded;
      if (nowDegraded) {
        int processes = fetchingProcesses();
        log.warn("Destination {}: shared cursor unavailable, pacing locally at {}/s "
                + "(ceiling {}/s divided by {} processes: maxFetchingProcesses {}, {} seen"
                + " taking turns)",
            destination.name(), destination.ratePerSecond() / processes,
            destination.ratePerSecond(), processes, destination.maxFetchingProcesses(),
            processesSeen.get());
      } else {
        log.info("Destination {}: shared cursor available again", destination.name());
      }
    }
  }

  private Slot refuse(long called) {
    permits.release();
    refused(called);
    return null;
  }

  /** Tells the listeners of a {@code tryAcquire} that found no turn in time. */
  private Optional<Slot> refused(long called) {
    listener.turn(new LimiterListener.Turn(destination.name(), LimiterListener.Outcome.REFUSED,
        Duration.ofNanos(time.nanoTime() - called)));
    return Optional.empty();
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
