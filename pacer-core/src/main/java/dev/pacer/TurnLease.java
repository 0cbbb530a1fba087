package dev.pacer;

import java.time.Duration;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A lease of turns: a process that asks for turns faster than it can round-trip to the cursor
 * reserves a block of {@code k} consecutive turns in one reservation, {@code next = max(now, next)
 * + k × gap}, and hands them out itself, one to each caller, at {@code first, first + gap, ...,
 * first + (k - 1) × gap}: exactly the instants {@code k} reservations of one turn in a row would
 * have placed, so the fleet's turns stay exactly spaced whoever holds them. Off unless the
 * destination allows it ({@link Destination#maxLeasedTurns()} above 1).
 *
 * <p><b>How big.</b> {@code k} follows this process's own recent demand: the asks it heard over the
 * lease's horizon (the longer of {@link Destination#leaseHorizon()} and the cursor's last round
 * trip), less the turns already in hand (leased and not handed out, or being leased in a
 * reservation not yet answered), at most {@code maxLeasedTurns}. A process that asks once per
 * horizon or less leases nothing and takes one turn a reservation, as without leases; one that asks
 * ten times per horizon takes about ten a reservation. So a process never holds more than {@code
 * maxLeasedTurns} turns beyond its callers' own ({@link Destination#maxTurnsPerProcess()}), which
 * is what the degrade rules count the rest of the fleet as holding.
 *
 * <p>A lease also takes no more turns than its callers can use: the block's turns come {@code gap}
 * apart, so at a rate {@code r} of asks below {@code 1 / gap} only the asks that arrive by a turn,
 * or within the late-turn limit {@code L} after it, can take it. With {@code W} the wait the cursor
 * last answered (how far the fleet's queue reaches), the asks that arrive by the {@code k}-th turn
 * number {@code r × (W + k × gap + L)}, so {@code k ≤ r × (W + L) / (1 - r × gap)}. A process
 * asking at 40/s against a 100/s ceiling with no queue ahead leases nothing; behind a queue, or
 * asking at the ceiling itself, it leases its demand.
 *
 * <p><b>Never late, never more.</b> A leased turn is handed out only while it is not late by the
 * late-turn rule ({@link LateTurns}), and its caller applies the rule again when it wakes, as for
 * any turn. A turn that nobody took in time is given up ({@link #unused}): the fleet can deliver
 * less than the ceiling, never more. A pause or a lockout heard after the lease was taken, and a
 * backoff, cut it short: every turn in hand is dropped, since the pause's end and the new spacing
 * are the cursor's to place; a turn still being leased when one begins is dropped on its answer.
 *
 * <p>Only arithmetic runs under this object's lock: the asynchronous path hands out leased turns on
 * its scheduler's thread, and a virtual thread may hold it.
 */
final class TurnLease {

  /** {@link #take} when no leased turn can be handed out. */
  static final long NONE = Long.MIN_VALUE;

  private final int maxTurns;
  private final long horizonNanos;

  /** The instants of the last asks, a ring of twice the largest lease. */
  private final long[] asks;

  private int nextAsk;
  private int askCount;
  private long roundTripNanos;
  private long lastWaitNanos;

  /** The leased turns in hand, earliest first (local clock). */
  private final PriorityQueue<Long> inHand = new PriorityQueue<>();

  /** The turns of reservations for a lease not yet answered. */
  private int beingLeased;

  /** The spacing of the turns in hand. */
  private long gapNanos;

  /** Where the last pause ended when the turns in hand were leased. */
  private long pausedUntil;

  /** Backoffs heard: a lease reserved before one is not handed out. */
  private long cuts;

  private final AtomicLong unused = new AtomicLong();

  TurnLease(Destination destination) {
    this.maxTurns = destination.maxLeasedTurns();
    this.horizonNanos = destination.leaseHorizon().toNanos();
    this.asks = new long[2 * maxTurns];
  }

  /** Whether the destination allows leases at all. */
  static boolean allowed(Destination destination) {
    return destination.maxLeasedTurns() > 1;
  }

  /** A caller asks for a turn at {@code now}. */
  synchronized void noteAsk(long now) {
    asks[nextAsk] = now;
    nextAsk = (nextAsk + 1) % asks.length;
    askCount = Math.min(askCount + 1, asks.length);
  }

  /**
   * A reservation of the shared cursor took {@code roundTrip} from the call to the answer, and its
   * turn starts {@code wait} after the answer.
   */
  synchronized void noteAnswer(long roundTrip, long wait) {
    roundTripNanos = Math.max(0, roundTrip);
    lastWaitNanos = Math.max(0, wait);
  }

  /**
   * The earliest turn in hand that a caller can still take at {@code now}, removed from the lease,
   * or {@link #NONE}. Turns too late for the rule at {@code gap} are given up on the way; every
   * turn in hand is given up if the spacing is no longer {@code gap}, or a pause or a lockout was
   * heard since they were leased.
   *
   * @param now the local clock
   * @param gap the spacing of this process's turns now
   * @param pausedNow where the last pause ends now ({@link Holds#pausedUntil()})
   * @param lockedOut whether the destination is locked out
   */
  synchronized long take(long now, long gap, long pausedNow, boolean lockedOut) {
    if (!inHand.isEmpty() && (gap != gapNanos || pausedNow != pausedUntil || lockedOut)) {
      dropInHand();
    }
    long lateLimit = LateTurns.limitNanos(Duration.ofNanos(gap));
    for (Long turn; (turn = inHand.poll()) != null; ) {
      if (now - turn <= lateLimit) {
        return turn;
      }
      unused.incrementAndGet();
    }
    return NONE;
  }

  /**
   * How many turns the caller asking at {@code now} should reserve at {@code gap}: 1 for its own
   * alone, or more, which it leases ({@link #leased} or {@link #notLeased} once the cursor
   * answers).
   */
  synchronized int turnsToReserve(long now, long gap) {
    long horizon = Math.max(Math.max(horizonNanos, roundTripNanos), 1);
    int demand = 0;
    long oldest = now;
    for (int i = 0; i < askCount; i++) {
      if (now - asks[i] < horizon) {
        demand++;
        oldest = Math.min(oldest, asks[i]);
      }
    }
    // A ring full of asks within the horizon holds fewer than the horizon saw: the rate is then
    // the ring's own.
    double ratePerNano =
        demand == asks.length
            ? (double) demand / Math.max(now - oldest, 1)
            : (double) demand / horizon;
    double spread = 1 - ratePerNano * gap;
    double late = LateTurns.limitNanos(Duration.ofNanos(gap));
    double usable =
        spread <= 0 ? maxTurns : Math.floor(ratePerNano * (lastWaitNanos + late) / spread);
    int k = (int) Math.min(Math.min(maxTurns, demand - beingLeased - inHand.size()), usable);
    if (k <= 1) {
      return 1;
    }
    beingLeased += k;
    return k;
  }

  /** What a lease's reservation is checked against when it is answered: the holds heard so far. */
  synchronized Heard heard(long pausedNow) {
    return new Heard(pausedNow, cuts);
  }

  /** The pause and the backoffs heard when a lease was reserved. */
  record Heard(long pausedUntil, long cuts) {}

  /**
   * The cursor granted {@code k} turns from {@code first} at {@code gap}: the first is the
   * caller's, the rest go in hand, unless a pause or a backoff was heard while they were reserved
   * ({@code before}, {@code pausedNow}); turns in hand at another spacing or from before a pause
   * are given up.
   */
  synchronized void leased(int k, long first, long gap, Heard before, long pausedNow) {
    beingLeased -= k;
    if (before.pausedUntil() != pausedNow || before.cuts() != cuts) {
      unused.addAndGet(k - 1);
      return;
    }
    if (!inHand.isEmpty() && (gap != gapNanos || pausedNow != pausedUntil)) {
      dropInHand();
    }
    gapNanos = gap;
    pausedUntil = pausedNow;
    for (int i = 1; i < k; i++) {
      inHand.add(first + i * gap);
    }
  }

  /** The reservation for {@code k} turns granted none to lease. */
  synchronized void notLeased(int k) {
    beingLeased -= k;
  }

  /** A backoff: every turn in hand is given up. */
  synchronized void cut() {
    cuts++;
    dropInHand();
  }

  /**
   * Leased turns given up by {@code now}: not taken in time, or dropped by a pause, a lockout or a
   * backoff. A turn in hand already too late for the rule is given up here, not at the next ask,
   * which may never come: the last lease of a busy spell counts when its turns pass.
   */
  synchronized long unused(long now) {
    long lateLimit = LateTurns.limitNanos(Duration.ofNanos(gapNanos));
    for (Long turn; (turn = inHand.peek()) != null && now - turn > lateLimit; ) {
      inHand.poll();
      unused.incrementAndGet();
    }
    return unused.get();
  }

  /** Leased turns in hand now. */
  synchronized int inHand() {
    return inHand.size();
  }

  private void dropInHand() {
    unused.addAndGet(inHand.size());
    inHand.clear();
  }
}
