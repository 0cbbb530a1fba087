package dev.pacer;

import dev.pacer.internal.RateMeter;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The steps to one turn, as {@link TurnStep}s, for both {@link DestinationLimiter#acquire} (which
 * sleeps through them) and {@link DestinationLimiter#acquireAsync} (which schedules them): the
 * reservation on the shared cursor, pacing locally while it is unavailable ({@link DegradedPacing})
 * and during a hand-over, a pause that holds a granted turn ({@link Holds}), a turn woken for too
 * late given up, and the turn's event for the listeners. Where the destination allows leases, a
 * turn may come from this process's lease instead of a reservation of its own ({@link TurnLease}),
 * and goes through the same pause and late-turn checks.
 */
final class Turns {

  private static final Logger log = LoggerFactory.getLogger(DestinationLimiter.class);

  /**
   * Every turn given up as late, at DEBUG: the WARN comes at the first, second, fourth and so on of
   * each destination, so that a busy host does not flood the log.
   */
  private static final Logger eachLateTurn = LoggerFactory.getLogger(LateTurns.class);

  private static final long RATE_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);

  /** A turn with no deadline: it is waited for however late it starts. */
  static final long NO_DEADLINE = Long.MIN_VALUE;

  private static final PacedTurn NO_TURN =
      new PacedTurn(Long.MIN_VALUE, LimiterListener.Outcome.REFUSED);

  private final Destination destination;
  private final Cursor shared;
  private final TimeSource time;
  private final Permits permits;
  private final LimiterListener listener;
  private final BackoffState backoff;
  private final DegradedPacing degraded;
  private final Holds holds;
  private final long baseIntervalNanos;
  private final RateMeter meter = new RateMeter(1024, RATE_WINDOW_NANOS);
  private final AtomicLong lateTurnsSkipped = new AtomicLong();

  /** Null unless the destination allows leases. */
  private final TurnLease lease;

  Turns(
      Destination destination,
      Cursor shared,
      TimeSource time,
      Permits permits,
      LimiterListener listener,
      BackoffState backoff,
      DegradedPacing degraded,
      Holds holds) {
    this.destination = destination;
    this.shared = shared;
    this.time = time;
    this.permits = permits;
    this.listener = listener;
    this.backoff = backoff;
    this.degraded = degraded;
    this.holds = holds;
    this.baseIntervalNanos = destination.interval().toNanos();
    this.lease = TurnLease.allowed(destination) ? new TurnLease(destination) : null;
  }

  /** The spacing of this process's turns: base × the backoff multiplier in force. */
  Duration currentInterval() {
    return Duration.ofNanos(baseIntervalNanos * backoff.multiplier());
  }

  long lateTurnsSkipped() {
    return lateTurnsSkipped.get();
  }

  /** Leased turns given up unused by now; 0 without leases. */
  long leasedTurnsUnused() {
    return lease == null ? 0 : lease.unused(time.nanoTime());
  }

  int leasedTurnsInHand() {
    return lease == null ? 0 : lease.inHand();
  }

  /** A backoff: the turns leased at the spacing before it are given up. */
  void cutLease() {
    if (lease != null) {
      lease.cut();
    }
  }

  /** The turns taken over the last 10 s, per second. */
  double currentRate() {
    return meter.perSecond(time.nanoTime());
  }

  /**
   * The steps to one turn that starts by {@code deadline}: see {@link TurnStep}. A turn this caller
   * wakes for too late ({@link LateTurns}) is given up and another one taken. A caller with no
   * deadline asking for one interval may be handed a leased turn ({@link TurnLease}).
   */
  TurnStep nextTurn(long called, long deadline, int intervals) {
    if (leases(deadline, intervals)) {
      lease.noteAsk(time.nanoTime());
    }
    return turn(called, deadline, intervals);
  }

  private boolean leases(long deadline, int intervals) {
    return lease != null && deadline == NO_DEADLINE && intervals == 1;
  }

  /** {@link #nextTurn}, for a caller already counted as asking. */
  private TurnStep turn(long called, long deadline, int intervals) {
    if (leases(deadline, intervals)) {
      return leasedTurn(called);
    }
    Duration interval = currentInterval();
    return waitForTurn(
        interval.multipliedBy(intervals),
        Duration.ofNanos(baseIntervalNanos).multipliedBy(intervals),
        deadline,
        turn -> takeOrRetry(turn, called, interval, deadline, intervals));
  }

  private TurnStep takeOrRetry(
      PacedTurn turn, long called, Duration interval, long deadline, int intervals) {
    if (turn == NO_TURN) {
      return new TurnStep.Refused();
    }
    long turnStart = turn.start();
    long pauseEnds = holds.pausedUntil();
    if (pauseEnds != Holds.NO_PAUSE && pauseEnds - turnStart > 0) {
      // The destination asked for a pause after this turn was granted: it is not taken, the caller
      // waits until the pause ends and asks again (the cursor's own turns already lie after it).
      holds.countTurnHeld();
      long left = pauseEnds - time.nanoTime();
      TurnStep.Next again =
          () -> {
            holds.checkNotLockedOut();
            return turn(called, deadline, intervals);
          };
      return left > 0 ? TurnStep.waitThen(left, again) : again.run();
    }
    // The check reads the clock after everything the grant hands over is built and the limit is
    // known: a process's first grant loads the classes of its slot, its hand-over, its event for
    // the listeners and the late-turn rule, which takes milliseconds in a fresh JVM, and time spent
    // after the check makes the request late unseen, close behind the next turn.
    long lateLimit = LateTurns.limitNanos(interval);
    long grantedAt = time.nanoTime();
    LimiterListener.Turn told =
        new LimiterListener.Turn(
            destination.name(), turn.outcome(), Duration.ofNanos(grantedAt - called));
    TurnStep.Granted handOver = new TurnStep.Granted(new Slot(permits, turnStart));
    long late = time.nanoTime() - turnStart;
    if (late <= lateLimit) {
      if (turn.outcome() == LimiterListener.Outcome.DEGRADED) {
        degraded.handedOver(grantedAt, interval.multipliedBy(intervals));
      }
      meter.record(grantedAt);
      listener.turn(told);
      return handOver;
    }
    long skipped = lateTurnsSkipped.incrementAndGet();
    eachLateTurn.debug(
        "Destination {}: turn given up, woken {} ms after it began (limit {} ms)",
        destination.name(),
        late / 1_000_000,
        lateLimit / 1_000_000);
    if (Long.bitCount(skipped) == 1) {
      log.warn(
          "Destination {}: a turn was given up because this process woke {} ms after it"
              + " began (limit {} ms): a late request would arrive close behind the next one."
              + " {} turn(s) given up so far; a busy host slows the run, not the ceiling",
          destination.name(),
          late / 1_000_000,
          lateLimit / 1_000_000,
          skipped);
    }
    return turn(called, deadline, intervals);
  }

  /**
   * A turn from the lease in hand, or a reservation that leases as many as this process's demand
   * asks for ({@link TurnLease}). While the cursor is unavailable or a hand-over lasts, the turn is
   * taken as without leases, by the degrade rules, and the turns in hand wait unused.
   */
  private TurnStep leasedTurn(long called) {
    Duration interval = currentInterval();
    Duration base = Duration.ofNanos(baseIntervalNanos);
    AtTurn then = turn -> takeOrRetry(turn, called, interval, NO_DEADLINE, 1);
    long now = time.nanoTime();
    long handOver = degraded.handOverEnds();
    if (degraded.isDegraded() || (handOver != DegradedPacing.NO_HAND_OVER && handOver - now > 0)) {
      return waitForTurn(interval, base, NO_DEADLINE, then);
    }
    long leased =
        lease.take(now, interval.toNanos(), holds.pausedUntil(), holds.lockoutReason() != null);
    if (leased != TurnLease.NONE) {
      return TurnStep.waitThen(
          leased - now,
          () -> {
            holds.checkNotLockedOut();
            return then.at(new PacedTurn(leased, LimiterListener.Outcome.SHARED));
          });
    }
    int k = lease.turnsToReserve(now, interval.toNanos());
    if (k == 1) {
      return waitForTurn(interval, base, NO_DEADLINE, then);
    }
    TurnLease.Heard heard = lease.heard(holds.pausedUntil());
    return reserving(
        interval.multipliedBy(k),
        base.multipliedBy(k),
        NO_DEADLINE,
        answer -> {
          Reservation turn = answer.turn();
          if (!turn.isGranted() || turn.isHandOver()) {
            lease.notLeased(k);
            return turn.isUnavailable()
                ? waitForTurn(interval, base, NO_DEADLINE, then)
                : afterSharedAnswer(answer, false, interval, base, NO_DEADLINE, then);
          }
          long gap =
              turn.fleetBackoff().isPresent()
                  ? baseIntervalNanos * turn.fleetBackoff().getAsInt()
                  : interval.toNanos();
          long first = answer.at() + turn.startsIn().toNanos();
          lease.leased(k, first, gap, heard, holds.pausedUntil());
          return untilSharedTurn(answer, then);
        });
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
    return paceLocallyDuringHandOver(
        interval,
        pacedLocally ->
            reserving(
                interval,
                base,
                deadline,
                answer -> {
                  Reservation turn = answer.turn();
                  if (turn.isLockedOut()) {
                    holds.noteLockout(turn.lockoutReason());
                    holds.checkNotLockedOut();
                  }
                  if (!turn.isUnavailable()) {
                    return afterSharedAnswer(answer, pacedLocally, interval, base, deadline, then);
                  }
                  long localNow = time.nanoTime();
                  long localWait =
                      degraded.degradedWait(interval, currentInterval(), deadline, localNow, true);
                  if (localWait < 0) {
                    return then.at(NO_TURN);
                  }
                  return TurnStep.waitThen(
                      localWait,
                      () -> {
                        holds.checkNotLockedOut();
                        // If the cursor answers again by now, this turn also takes a shared one, so
                        // that turns
                        // granted locally never add to the fleet's once coordination is back.
                        long localTurn = localNow + localWait;
                        return reserving(
                            interval,
                            base,
                            deadline,
                            again ->
                                again.turn().isUnavailable()
                                    ? then.at(
                                        new PacedTurn(localTurn, LimiterListener.Outcome.DEGRADED))
                                    : afterSharedAnswer(
                                        again, true, interval, base, deadline, then));
                      });
                }));
  }

  private TurnStep afterSharedAnswer(
      SharedAnswer answer,
      boolean pacedLocally,
      Duration interval,
      Duration base,
      long deadline,
      AtTurn then) {
    Reservation turn = answer.turn();
    if (turn.isGranted() && turn.isHandOver() && !pacedLocally) {
      // The first news of a hand-over: the shared turn is taken again after the local one, so
      // that it holds the instant the request leaves. A shared turn held from before the local
      // wait would be in the past by then, and once the hand-over ends the turns still waiting
      // locally would add to the new shared ones.
      return paceLocallyDuringHandOver(
          interval,
          paced ->
              reserving(
                  interval,
                  base,
                  deadline,
                  again ->
                      again.turn().isUnavailable()
                          ? then.at(
                              new PacedTurn(time.nanoTime(), LimiterListener.Outcome.DEGRADED))
                          : untilSharedTurn(again, then)));
    }
    return untilSharedTurn(answer, then);
  }

  private TurnStep untilSharedTurn(SharedAnswer answer, AtTurn then) {
    Reservation turn = answer.turn();
    if (turn.isLockedOut()) {
      holds.noteLockout(turn.lockoutReason());
      holds.checkNotLockedOut();
    }
    if (turn.isRefused()) {
      return then.at(NO_TURN);
    }
    // The wait counts from the cursor's answer, not from now: a thread held up on its way here
    // (on a busy host, for milliseconds) would otherwise start its turn that much late, unseen by
    // the check for late turns, and close behind the next turn. A turn that began before the
    // answer came back starts in the past: the check for late turns must see how late it already
    // is, or a turn restarted at the answer would fall just before the next one.
    long turnStart = answer.at() + turn.startsIn().toNanos();
    return TurnStep.waitThen(
        turnStart - time.nanoTime(),
        () -> {
          holds.checkNotLockedOut();
          return then.at(new PacedTurn(turnStart, LimiterListener.Outcome.SHARED));
        });
  }

  /** {@link #reserveShared}, behind a round trip: what the asynchronous path runs on its pool. */
  private TurnStep reserving(
      Duration interval, Duration base, long deadline, Function<SharedAnswer, TurnStep> then) {
    return TurnStep.roundTrip(() -> then.apply(reserveShared(interval, base, deadline)));
  }

  /** What follows the local pacing of a hand-over: whether it paced. */
  @FunctionalInterface
  private interface AfterPacing {
    TurnStep paced(boolean pacedLocally);
  }

  /**
   * While a hand-over lasts, waits until this process's next local turn, but no later than the
   * hand-over's end: until then another process may still pace locally, so this one paces no faster
   * than locally too; after it, every process is back on the shared cursor, and a turn still
   * waiting locally would only hold the fleet below the ceiling. Goes on with whether it paced.
   */
  private TurnStep paceLocallyDuringHandOver(Duration interval, AfterPacing then) {
    long end = degraded.handOverEnds();
    long now = time.nanoTime();
    if (end == DegradedPacing.NO_HAND_OVER || end - now <= 0) {
      return then.paced(false);
    }
    long left = end - now;
    long wait =
        Math.min(left, degraded.degradedWait(interval, currentInterval(), NO_DEADLINE, now, false));
    return TurnStep.waitThen(
        wait,
        () -> {
          holds.checkNotLockedOut();
          return then.paced(true);
        });
  }

  private SharedAnswer reserveShared(Duration interval, Duration base, long deadline) {
    long before = time.nanoTime();
    Duration notBefore = degraded.sharedNotBefore(currentInterval(), before);
    Reservation turn;
    Duration maxWait =
        deadline == NO_DEADLINE ? null : Duration.ofNanos(Math.max(0, deadline - before));
    int clean = 0;
    try {
      if (backoff.isFleet()) {
        clean = backoff.takeClean();
        turn = shared.reserveUnderFleetBackoff(destination.name(), base, notBefore, maxWait, clean);
      } else {
        turn =
            maxWait == null
                ? shared.reserve(destination.name(), interval, notBefore)
                : shared.tryReserve(destination.name(), interval, notBefore, maxWait);
      }
    } catch (RuntimeException e) {
      // A cursor must not throw; if one does anyway, pacing degrades rather than stopping.
      log.warn("Cursor {} threw instead of answering; treating it as unavailable", shared, e);
      turn = Reservation.unavailable();
    }
    long answered = time.nanoTime();
    if (lease != null && turn.isGranted()) {
      lease.noteAnswer(answered - before, turn.startsIn().toNanos());
    }
    if (backoff.isFleet() && !turn.isGranted()) {
      backoff.returnClean(clean);
    }
    if (turn.isGranted()) {
      Duration spaced = interval;
      if (turn.fleetBackoff().isPresent()) {
        backoff.fleetAnswered(turn.fleetBackoff().getAsInt());
        spaced = base.multipliedBy(turn.fleetBackoff().getAsInt());
      }
      degraded.granted(
          turn, answered, spaced, shared.fetchingProcesses(destination.name()).orElse(0));
    }
    degraded.noteDegraded(turn.isUnavailable(), answered);
    return new SharedAnswer(turn, answered);
  }
}
