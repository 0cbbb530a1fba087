package dev.pacer;

import dev.pacer.internal.Pacing;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a limiter knows of the shared cursor to pace without it: where it last saw the cursor, the
 * processes the cursor counted, the hand-over the cursor reported, and the local cursor it paces on
 * while the shared one is unavailable.
 *
 * <p>Locally the interval is multiplied by the {@linkplain #degradeDivisor processes that may be
 * fetching}, so that with every process degraded at once the fleet still stays under the ceiling.
 */
final class DegradedPacing {

  private static final Logger log = LoggerFactory.getLogger(DestinationLimiter.class);
  static final long NO_HAND_OVER = Long.MIN_VALUE;

  private final Destination destination;
  private final CursorOutage outage;

  /**
   * The processes the cursor counted with the last shared turn ({@link Cursor#fetchingProcesses}),
   * 0 if it counted none. Kept through an outage: the processes it counted pace locally beside this
   * one for as long as it lasts.
   */
  private final AtomicInteger processesSeen = new AtomicInteger();

  /** Where this process last saw the shared cursor, on the local clock. */
  private final AtomicLong sharedHorizon = new AtomicLong(Pacing.NO_CURSOR);

  private final Object degradedLock = new Object();

  /** The local cursor used while the shared one is unavailable. */
  private long degradedCursor = Pacing.NO_CURSOR;

  /**
   * When this process, through any of its limiters, first found the shared cursor unavailable in
   * the outage this limiter is degraded by (local clock): the cursor took no turn after then, so
   * the turns the fleet still holds on it lie within the fleet's permits of that instant, however
   * long ago this process last saw it.
   */
  private volatile long lostAt;

  /** Where the last hand-over the cursor reported ends, on the local clock. */
  private volatile long handOverEnds = NO_HAND_OVER;

  private volatile boolean degraded;

  DegradedPacing(Destination destination, CursorOutage outage) {
    this.destination = destination;
    this.outage = outage;
  }

  /**
   * The latest instant (local clock) this state still matters, from {@code last} on: the end of a
   * hand-over, where this process last saw the shared cursor plus the turns the rest of the fleet
   * may have queued after it at {@code interval}, and its local cursor.
   */
  long lastThatMatters(long last, Duration interval) {
    long handOver = handOverEnds;
    if (handOver != NO_HAND_OVER) {
      last = later(last, handOver);
    }
    long horizon = sharedHorizon.get();
    if (horizon != Pacing.NO_CURSOR) {
      last = later(last, horizon + saturatedProduct(interval.toNanos(), fleetPendingTurns()));
    }
    synchronized (degradedLock) {
      if (degradedCursor != Pacing.NO_CURSOR) {
        last = later(last, degradedCursor);
      }
    }
    return last;
  }

  static long later(long a, long b) {
    return b - a > 0 ? b : a;
  }

  /**
   * How long from {@code now} a shared turn must not start: if the cursor was lost or reset, the
   * turns granted before are still on their way: up to where this process last saw the cursor, and
   * at most the rest of the fleet's pending turns beyond that. A restarted cursor starts after
   * them.
   */
  Duration sharedNotBefore(Duration interval, long now) {
    long horizon = sharedHorizon.get();
    return Duration.ofNanos(
        horizon == Pacing.NO_CURSOR
            ? 0
            : Math.max(
                0, horizon + saturatedProduct(interval.toNanos(), fleetPendingTurns()) - now));
  }

  /**
   * A shared turn granted at {@code answered} (local clock), the cursor moved on by {@code spaced},
   * and the processes the cursor counts taking turns (0 for none).
   */
  void granted(Reservation turn, long answered, Duration spaced, int processes) {
    processesSeen.set(processes);
    long cursorAfter = answered + turn.startsIn().toNanos() + spaced.toNanos();
    sharedHorizon.accumulateAndGet(cursorAfter, Math::max);
    if (turn.isHandOver()) {
      handOverEnds = answered + turn.handOverLeft().toNanos();
    }
  }

  /** Where the last hand-over the cursor reported ends (local clock), or NO_HAND_OVER. */
  long handOverEnds() {
    return handOverEnds;
  }

  boolean isDegraded() {
    return degraded;
  }

  /**
   * The wait for a turn paced locally, or -1 if it would start after {@code deadline}.
   *
   * <p>Locally this request's {@code spacing} (its intervals: a caller may ask for more than one)
   * is multiplied by the {@linkplain #degradeDivisor processes that may be fetching}. The first
   * local turn after coordination is lost also waits until every turn the fleet may still hold on
   * the shared cursor has passed. Other processes hold at most P = (processes - 1) x maxConcurrency
   * of them, each one {@code turnInterval} (a turn's spacing at the backoff in force, whatever this
   * request asks) after the last: queued after the last cursor position this process saw, or, if
   * that is already past when the cursor is lost or this process never saw the cursor, after a turn
   * that began by then, since a cursor that caught up with the clock restarts from its now. The
   * queue therefore ends by the later of that position and the loss plus one interval, plus P
   * intervals. Without that, local turns would start while the shared queue still drains, and the
   * fleet would briefly run at up to twice the ceiling. A turn taken during a hand-over ({@code
   * afterFleetQueue} false) holds a shared turn as well, so it only keeps to the local spacing.
   */
  long degradedWait(
      Duration spacing, Duration turnInterval, long deadline, long now, boolean afterFleetQueue) {
    synchronized (degradedLock) {
      long fleetQueueEnd =
          afterFleetQueue ? fleetQueueEnd(turnInterval.toNanos()) : Pacing.NO_CURSOR;
      long stored = Math.max(degradedCursor, fleetQueueEnd);
      long localInterval = saturatedProduct(spacing.toNanos(), fetchingProcesses());
      Pacing.Turn turn =
          deadline == Turns.NO_DEADLINE
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
   * A turn paced locally at {@code interval} was handed over at {@code handedOver} (local clock),
   * after it began: the next local turn starts no sooner than a local interval after the hand-over,
   * not only after the turn. Nothing interleaves the turns of processes pacing locally: each starts
   * where the fleet's queue on the lost cursor ends, so they are in phase. A process whose turn
   * went out late and whose next went out on time would send two requests within one local
   * interval, and with every process in phase doing the same, a window of that length would hold
   * two turns of each, more than the ceiling allows when the local interval is about a window long.
   */
  void handedOver(long handedOver, Duration interval) {
    long next = handedOver + saturatedProduct(interval.toNanos(), fetchingProcesses());
    synchronized (degradedLock) {
      if (degradedCursor != Pacing.NO_CURSOR) {
        degradedCursor = later(degradedCursor, next);
      }
    }
  }

  /**
   * Where the turns the rest of the fleet may still hold on the lost cursor end (local clock). With
   * none pending elsewhere, this process's own turns end where it last saw the cursor (NO_CURSOR if
   * it never saw it). A process that never saw the cursor knows nothing of the queue but its bound:
   * the others' turns, after a turn that began by the loss.
   */
  private long fleetQueueEnd(long intervalNanos) {
    long horizon = sharedHorizon.get();
    long pending = fleetPendingTurns();
    if (pending == 0) {
      return horizon;
    }
    long restart = lostAt + intervalNanos;
    return (horizon == Pacing.NO_CURSOR ? restart : later(horizon, restart))
        + saturatedProduct(intervalNanos, pending);
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

  /**
   * The turns the rest of the fleet may hold queued: each other process's permits, and its lease.
   */
  private long fleetPendingTurns() {
    return (long) (fetchingProcesses() - 1) * destination.maxTurnsPerProcess();
  }

  private static long saturatedProduct(long a, long b) {
    long high = Math.multiplyHigh(a, b);
    long low = a * b;
    return (high == 0 && low >= 0) ? low : Long.MAX_VALUE / 4;
  }

  /**
   * Whether the last reservation, answered at {@code answered} (local clock), found the shared
   * cursor unavailable; logs each change. Every answer is told to the registry's {@link
   * CursorOutage}, which knows when any limiter first found the cursor unavailable.
   */
  void noteDegraded(boolean nowDegraded, long answered) {
    if (nowDegraded) {
      long firstFoundUnavailable = outage.unavailable(answered);
      if (!degraded) {
        lostAt = firstFoundUnavailable;
      }
    } else {
      outage.answered(answered);
    }
    if (nowDegraded != degraded) {
      degraded = nowDegraded;
      if (nowDegraded) {
        int processes = fetchingProcesses();
        log.warn(
            "Destination {}: shared cursor unavailable, pacing locally at {}/s "
                + "(ceiling {}/s divided by {} processes: maxFetchingProcesses {}, {} seen"
                + " taking turns)",
            destination.name(),
            destination.ratePerSecond() / processes,
            destination.ratePerSecond(),
            processes,
            destination.maxFetchingProcesses(),
            processesSeen.get());
      } else {
        log.info("Destination {}: shared cursor available again", destination.name());
      }
    }
  }
}
