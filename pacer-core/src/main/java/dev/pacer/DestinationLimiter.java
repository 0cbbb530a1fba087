package dev.pacer;

import dev.pacer.shared.Redaction;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
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
 * <p>{@link #acquire()} first takes one of the process's {@code maxConcurrency} permits, then, for
 * a destination with {@code maxConcurrencyFleetWide}, one of the fleet's slots (see {@code
 * FleetCap}: before the turn, because a turn held while waiting for a slot would go stale), then
 * reserves a turn from the shared {@link Cursor} at the destination's interval times the current
 * backoff multiplier, sleeps until that turn (holding no lock and no connection), and returns the
 * slot. If the shared cursor is unavailable, the turn comes from a local cursor at the interval
 * times the processes that may be fetching: the larger of {@code maxFetchingProcesses} and the
 * count the cursor gave with the last shared turn ({@link Cursor#fetchingProcesses}), so that with
 * every process degraded at once the fleet still stays under the ceiling, a fleet larger than
 * configured too, and no process stops (neither fail open nor fail closed). The two hand-overs are
 * guarded too: the first local turn waits for the turns the fleet may still hold on the shared
 * cursor, a locally paced turn that ends after the cursor came back also takes a shared turn, and a
 * shared turn granted during a hand-over ({@link Reservation#isHandOver()}: until one cooldown past
 * the retry boundary after the return, while another process may still pace locally) waits for its
 * local turn first and then takes its shared turn again, so it starts at the later of the two.
 * Until the hand-over's end, later turns pace locally first and take one shared turn; a local wait
 * never outlasts the hand-over, so the fleet is back at the full rate as soon as it ends.
 *
 * <p>A destination that allows leases ({@link Destination#maxLeasedTurns()}) lets a process that
 * asks faster than it round-trips reserve several consecutive turns in one reservation and hand
 * them to its own callers, exactly spaced; a leased turn not taken in time is given up, never sent
 * late ({@link #leasedTurnsUnused()}). See {@code TurnLease}.
 *
 * <p>Responses feed back through {@link #backoff()} (429/503: the interval doubles, up to 16
 * times), {@link #noteCleanResponse()} (100 in a row halve it back) and {@link #lockOut} (403:
 * every later acquire throws {@link LockedOutException}).
 *
 * <p>What the limiter does is told to the {@link LimiterListener}s of its registry: each turn
 * (shared, degraded or refused) and how long it took, each rate-pressure answer, a lockout.
 *
 * <p><b>Without a thread per waiter.</b> {@link #acquireAsync()} takes the same turn with no thread
 * waiting for it. The turn-taking above is written once, as a chain of {@link TurnStep}s, each a
 * wait of so many nanoseconds, a round trip to the cursor or the fleet's slots, or the outcome;
 * {@link #acquire()} sleeps through the waits on the {@link TimeSource}, and {@link
 * #acquireAsync()} schedules them on the registry's {@link AsyncPools}, making the round trips on
 * its small executor. The permits are one first-come-first-served queue for both kinds of caller. A
 * fleet slot is claimed by the same attempts {@code FleetCap} makes for a blocked caller, each on
 * the executor, with the poll's spacing scheduled between them rather than slept: a full fleet ties
 * up no thread, and a claim that blocks on JDBC blocks an executor thread for one round trip, as a
 * reservation does.
 *
 * <p><b>Virtual threads.</b> {@link #acquire()} on a virtual thread leaves its carrier whenever it
 * waits: for a permit it parks on a future (no monitor held), for its turn it sleeps, and the round
 * trips go through {@code PostgresCursor}, which guards its connection with a {@code
 * ReentrantLock}, and pgjdbc (42.6 and later guard the connection with locks, not {@code
 * synchronized}). The {@code synchronized} blocks of the limiter's parts (the local cursor of
 * {@code DegradedPacing}, the lockout of {@code Holds}), of the rate meter and of the permit queue
 * hold only arithmetic, never a wait: on JDK 21 to 23, where a virtual thread blocked inside {@code
 * synchronized} pins its carrier, none can block there. From JDK 24 a virtual thread blocked in
 * {@code synchronized} no longer pins at all. A virtual thread meeting a class that another is
 * loading pins for that once, a JDK matter, so {@code Permits} meets the classes of a waiter's
 * giving up before any waiter can. The suite counts JFR's {@code jdk.VirtualThreadPinned} events
 * for many virtual threads on a real cursor on the oldest JDK of 21 or later it finds; on 24 or
 * later it cannot see a {@code synchronized} block that blocks, and this paragraph is what rules
 * one out on 21 to 23.
 */
public final class DestinationLimiter {

  private static final Logger log = LoggerFactory.getLogger(DestinationLimiter.class);

  private final Destination destination;
  private final Cursor shared;
  private final FleetCap fleetCap;
  private final LimiterListener listener;
  private final TimeSource time;
  private final AsyncPools pools;
  private final Permits permits;
  private final BackoffState backoff;
  private final DegradedPacing degraded;
  private final Holds holds;
  private final Turns turns;

  /** What this limiter is told of the cursor's pauses and lockouts by. */
  private final Cursor.Listener cursorHolds;

  private final EvictionGuard eviction;

  DestinationLimiter(
      Destination destination,
      Cursor shared,
      FleetCap fleetCap,
      CursorOutage outage,
      TimeSource time,
      AsyncPools pools,
      LimiterListener listener,
      Consumer<DestinationLimiter> takeBack) {
    this.destination = destination;
    this.listener = listener;
    this.shared = shared;
    this.fleetCap = fleetCap;
    this.time = time;
    this.pools = pools;
    this.permits = new Permits(destination.maxConcurrency(), time);
    this.eviction = new EvictionGuard(() -> takeBack.accept(this));
    this.backoff = new BackoffState(destination.backoffScope());
    if (backoff.isFleet() && !shared.keepsFleetBackoff()) {
      throw new IllegalArgumentException(
          "destination "
              + destination.name()
              + ": backoffScope"
              + " FLEET needs a cursor that keeps the fleet's backoff multiplier, and "
              + shared
              + " keeps none (the key/value table layout has nowhere to keep it without changing"
              + " the row format); use Pacer's own table, or backoffScope PROCESS");
    }
    this.degraded = new DegradedPacing(destination, outage);
    this.holds = new Holds(destination, listener, time);
    this.turns = new Turns(destination, shared, time, permits, listener, backoff, degraded, holds);
    this.cursorHolds = holds.cursorListener();
  }

  /** Hears the pauses and lockouts the cursor announces: from creation, and once taken back. */
  void startListening() {
    shared.listen(destination.name(), cursorHolds);
  }

  /** Evicted: the cursor need no longer tell this limiter anything. */
  void stopListening() {
    shared.unlisten(destination.name(), cursorHolds);
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
    if (allIn.isEmpty() || holds.lockoutReason() != null || backoff.isOwnBackedOff()) {
      return false;
    }
    long last = allIn.getAsLong();
    long pause = holds.pausedUntil();
    if (pause != Holds.NO_PAUSE) {
      last = DegradedPacing.later(last, pause);
    }
    last = degraded.lastThatMatters(last, currentInterval());
    return time.nanoTime() - last >= idleNanos;
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
   * first, and the next request anywhere in the fleet comes {@code intervals} intervals later. For
   * a request that may leave late for a reason no warm-up removes, such as this process's first
   * connection to the destination: its lateness then falls into its own margin instead of onto the
   * next turn.
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
      return turnHolding(fleetSlot, called, Turns.NO_DEADLINE, intervals);
    } finally {
      eviction.exit();
    }
  }

  /**
   * {@link #acquire()} without a thread waiting: the future completes with the slot at the turn
   * (close the slot when the request is done, as with {@link #acquire()}). The permit is queued
   * with the blocked callers', first come first served. The round trips (the reservation on the
   * cursor, a fleet slot's claim) run on the registry's {@link AsyncPools round-trip executor}, and
   * every wait (for the turn, for a pause's end, between polls for a fleet slot) is a task on its
   * scheduler, whose thread completes the future: see {@link AsyncPools} for what a dependent stage
   * may do there. The turn is the one {@link #acquire()} would have had, by the same steps
   * (degraded pacing, hand-overs, a pause holding a granted turn, a late turn given up, backoff).
   *
   * <p>Cancelling the future before the turn gives back the permit, or the place in its queue, and
   * a fleet slot already taken. A turn already reserved on the shared cursor cannot be given back:
   * the cursor has moved past it, and the fleet's next turn comes an interval after it whether or
   * not a request uses it (as for a caller of {@link #acquire()} interrupted in its wait).
   *
   * @return a future that completes with the slot; exceptionally with {@link LockedOutException} if
   *     the destination is locked out, before or during the wait, and with whatever the pools throw
   *     if they refuse work (shut down); in every such case nothing is kept
   */
  public CompletableFuture<Slot> acquireAsync() {
    return startAsync(null);
  }

  /**
   * {@link #acquireAsync()}, the turn granted on {@code grantOn}: each wait's end, and with it the
   * check for a turn woken too late for, runs on that executor, and completes the future there.
   * Give it the executor the request is sent on, and send in a stage added without {@code ...Async}
   * ({@code thenCompose}, {@code handle}): the request then leaves on the thread that judged the
   * turn in time, as with {@link #acquire()}, and a busy executor that runs the task late has its
   * turn given up and another taken instead of its request sent late, unseen. ({@code
   * PacedHttpClient#sendAsync} does so.)
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
      String reason = holds.lockoutReason();
      if (reason != null) {
        return CompletableFuture.failedFuture(new LockedOutException(destination.name(), reason));
      }
      long called = time.nanoTime();
      return AsyncAcquisition.start(
          permits,
          pools,
          grantOn,
          took -> fleetSlotThenTurn(called, FleetCap.firstPollNanos(), took));
    } finally {
      eviction.exit();
    }
  }

  /**
   * The asynchronous path's fleet slot, claimed by the attempts {@link FleetCap#take} makes, at its
   * poll spacing but with no thread asleep between them; then the turn.
   */
  private TurnStep fleetSlotThenTurn(long called, long pollNanos, Consumer<FleetCap.Held> took) {
    return TurnStep.roundTrip(
        () -> {
          checkNotLockedOut();
          Optional<FleetCap.Held> held = fleetCap.tryTakeNow();
          if (held.isEmpty()) {
            return TurnStep.waitThen(
                pollNanos,
                () -> fleetSlotThenTurn(called, FleetCap.nextPollNanos(pollNanos), took));
          }
          took.accept(held.get());
          return turns.nextTurn(called, Turns.NO_DEADLINE, 1);
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
      Slot slot = TurnStep.runBlocking(() -> turns.nextTurn(called, deadline, intervals), time);
      return slot == null ? refuse(called) : slot;
    } catch (Throwable t) {
      permits.release();
      throw t;
    }
  }

  /**
   * Turns given up because this process woke too late for them.
   *
   * @return the number of turns skipped
   */
  public long lateTurnsSkipped() {
    return turns.lateTurnsSkipped();
  }

  /**
   * Turns this process leased ({@link Destination#maxLeasedTurns()}) and gave up unused: not taken
   * in time, or dropped by a pause, a lockout or a backoff. Each is an interval the fleet did not
   * use; none was sent late. A turn still in hand counts once it is too late to take, whether or
   * not anyone asks again.
   *
   * @return the leased turns given up
   */
  public long leasedTurnsUnused() {
    return turns.leasedTurnsUnused();
  }

  /** Leased turns in hand now, for tests. */
  int leasedTurnsInHand() {
    return turns.leasedTurnsInHand();
  }

  /**
   * Feeds one answer from the destination back into its pacing, and says what it was: a {@linkplain
   * Destination#lockoutStatusCodes() lockout status} locks the destination out ({@link #lockOut},
   * with the reason "HTTP status from {@code source}"); a {@linkplain
   * Destination#backoffStatusCodes() backoff status} backs off, and with a {@code Retry-After}
   * (delta-seconds or an HTTP-date, read against this limiter's wall clock) pauses the fleet
   * ({@link #backoff(Duration)}); any other status is a clean response ({@link
   * #noteCleanResponse()}).
   *
   * @param status the answer's HTTP status
   * @return what the answer was taken for
   * @param retryAfter the answer's {@code Retry-After} header, or null if it has none; a value that
   *     is neither form is ignored and the status's own backoff still applies
   * @param source what was asked for (a URL), named in the lockout's reason
   */
  public Answer noteAnswer(int status, String retryAfter, Object source) {
    if (destination.lockoutStatusCodes().contains(status)) {
      lockOut("HTTP " + status + " from " + Redaction.address(source));
      return Answer.LOCKED_OUT;
    }
    if (destination.backoffStatusCodes().contains(status)) {
      Optional<Duration> pause =
          RetryAfter.parse(retryAfter, Instant.ofEpochMilli(time.epochMillis()));
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
      turns.cutLease();
      listener.throttled(destination.name(), backoff.onRatePressure(shared, destination.name()));
    } finally {
      eviction.exit();
    }
  }

  /**
   * A clean response: after 100 in a row the backoff multiplier halves, never below 1 (under {@link
   * BackoffScope#FLEET}, 100 anywhere in the fleet: counted with the next reservation).
   */
  public void noteCleanResponse() {
    eviction.enter();
    try {
      backoff.onCleanResponse();
    } finally {
      eviction.exit();
    }
  }

  /**
   * A rate-pressure response that says how long to wait ({@code Retry-After}): doubles the interval
   * as {@link #backoff()} does, and pauses the fleet for {@code retryAfter} (see {@link #pause}).
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
    Duration capped = holds.capped(delay);
    if (capped.isNegative() || capped.isZero()) {
      return;
    }
    eviction.enter();
    try {
      holds.holdUntil(time.nanoTime() + capped.toNanos());
    } finally {
      eviction.exit();
    }
    boolean shared = this.shared.pause(destination.name(), capped);
    log.warn(
        "Destination {} asked for a pause of {} ms{}; {}",
        destination.name(),
        capped.toMillis(),
        capped.equals(delay) ? "" : " (capped from " + delay.toMillis() + " ms)",
        shared
            ? "every limiter sharing the cursor holds its turns until it ends"
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
      first = holds.noteLockout(recorded);
    } finally {
      eviction.exit();
    }
    if (first && !shared.lockOut(destination.name(), recorded)) {
      log.error(
          "Destination {}: the cursor did not record the lockout; processes started later"
              + " will not know of it",
          destination.name());
    }
  }

  /**
   * Turns granted before a pause and not taken because of it.
   *
   * @return the number of turns held
   */
  public long turnsHeldForPause() {
    return holds.turnsHeldForPause();
  }

  /**
   * How long the pause the destination asked for still lasts; zero if none is in force.
   *
   * @return the pause left
   */
  public Duration pauseLeft() {
    return holds.pauseLeft();
  }

  /**
   * Whether the destination is locked out, here or anywhere in the fleet as far as this process has
   * heard.
   *
   * @return whether every further turn is refused
   */
  public boolean isLockedOut() {
    return holds.lockoutReason() != null;
  }

  /**
   * Why the destination was locked out (for example "HTTP 403 from ..."), or null if it is not.
   *
   * @return the reason, or null
   */
  public String lockoutReason() {
    return holds.lockoutReason();
  }

  /**
   * The current backoff multiplier on the interval: 1, 2, 4, 8 or 16.
   *
   * @return the multiplier
   */
  public int backoffMultiplier() {
    return backoff.multiplier();
  }

  /**
   * The spacing of this process's turns: base × backoff (under {@link BackoffScope#FLEET}, the
   * fleet's multiplier as last seen).
   *
   * @return the interval now in force
   */
  public Duration currentInterval() {
    return turns.currentInterval();
  }

  /**
   * True while the last reservation had to be paced locally because the cursor was unavailable.
   *
   * @return whether this process is pacing alone
   */
  public boolean isDegraded() {
    return degraded.isDegraded();
  }

  /**
   * The rate of turns this process achieved over the last 10 s, per second.
   *
   * @return turns per second
   */
  public double currentRate() {
    return turns.currentRate();
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

  private Slot refuse(long called) {
    permits.release();
    refused(called);
    return null;
  }

  /** Tells the listeners of a {@code tryAcquire} that found no turn in time. */
  private Optional<Slot> refused(long called) {
    listener.turn(
        new LimiterListener.Turn(
            destination.name(),
            LimiterListener.Outcome.REFUSED,
            Duration.ofNanos(time.nanoTime() - called)));
    return Optional.empty();
  }

  private void checkNotLockedOut() {
    holds.checkNotLockedOut();
  }

  @Override
  public String toString() {
    return "DestinationLimiter{" + destination.name() + ", cursor=" + shared + "}";
  }
}
