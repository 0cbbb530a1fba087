package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pacer.LateTurns;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The bounds a fleet test holds a run to, judged at the door, at a ceiling of {@code c} per second:
 *
 * <ol>
 *   <li><b>Busiest window.</b> No 1-s window, from the first arrival on, holds more than {@code
 *       floor(c) + 1}: the turns are {@code 1/c} apart, so a window holds {@code c} of them, plus
 *       one when a stamp's delay moves an arrival across the window's edge.
 *   <li><b>Aggregate.</b> Over the run's steady part, {@code n} arrivals span at least {@code (n -
 *       1)/c} less the lateness a correct turn may reach the door with: the late-turn rule's limit
 *       ({@link LateTurns#limit}: a turn woken up to half an interval late is taken, and its
 *       request sent that late), plus the stamp error, {@link #STAMP_ERROR_SECONDS}. Only the first
 *       arrival's lateness shortens the span, by that much however long the span, so over a long
 *       enough steady part any rate above the ceiling breaks it. At low rates this is the bound
 *       that bites: at 2/s a window may hold 3, 1.5 times the ceiling, while 20 arrivals at 2.2/s
 *       break the aggregate.
 *   <li><b>Delivered.</b> Over the steady part, the aggregate is at least {@link #MIN_DELIVERED}
 *       times the rate the run should deliver (the ceiling, or the share a degraded fleet paces
 *       at): a limiter that gives up one turn in ten delivers 0.9 of it. The members of a degraded
 *       fleet, each paced alone, are judged together ({@link #assertDeliveredByMembers}).
 *   <li><b>Late turns.</b> Turns given up because their taker woke too late are at most {@link
 *       #MAX_LATE_SHARE} of the turns taken, or the turns of one stall of the host if that is more:
 *       a stall costs the turns that fall in it, whatever the run's length, and a short run has
 *       fewer turns than 1 % of it needs to absorb one. The stall is {@link #STALL_SECONDS}, or the
 *       longest this JVM met during the run ({@link JvmStalls}) if that is longer: on a machine
 *       with fewer cores than runnable threads every sleeper wakes late at once, the fleet's takers
 *       as this JVM's sampler.
 * </ol>
 *
 * <p>A door in this JVM ({@link DoorServer}) stamps late by as much as this JVM stalls: its runs'
 * stamp error is {@link #STAMP_ERROR_SECONDS}, or the longest stall this JVM met during the run if
 * that is longer, and their busiest window may hold the turns of that stall besides (beside those
 * of the late-turn limit, when the stall is longer than the stamp error). A door in a JVM of its
 * own ({@link Door}) is judged at the stamp error alone, and its window at {@code floor(c) + 1}.
 *
 * <p>A run whose upper bound broke is reported as skipped, naming the cause, in two cases the test
 * cannot tell from a fault of the fleet: this host's wall clock stepped forward during it ({@link
 * WallClockSteps}: the database's clock is this host's, and a step with turns queued is a known
 * limit, docs/reliability.md), or the door could not run at the real-time policy ({@link
 * Door#realTime()}), so its stamps lag on a busy machine.
 */
public final class FleetBounds {

  /**
   * How late a request's stamp at the door may be against its turn: the sleep that ends the turn
   * may end late, and the request has a loopback hop to make. It is several times the spread of
   * arrivals about a perfect grid ({@link Timeline#gridSpreadSeconds}) that the fleet tests print
   * on a two-core machine shared with other builds.
   */
  public static final double STAMP_ERROR_SECONDS = 0.030;

  /** Half-way between a limiter that delivers every turn and one that gives up one in ten. */
  public static final double MIN_DELIVERED = 0.95;

  /** The share of turns a fleet may give up as late, on a quiet or a loaded machine. */
  public static final double MAX_LATE_SHARE = 0.01;

  /**
   * The longest stall of the whole host a run may meet, every member waking late at once, as on one
   * core shared with the database and the door.
   */
  public static final double STALL_SECONDS = 0.15;

  private static final long SECOND = 1_000_000_000L;

  private final double ceiling;
  private final String what;
  private final boolean doorRealTime;
  private final boolean doorInThisJvm;

  /** How late a turn may be taken by the late-turn rule, in seconds. */
  private final double lateLimitSeconds;

  private FleetBounds(double ceiling, String what, boolean doorRealTime, boolean doorInThisJvm) {
    this(ceiling, what, doorRealTime, doorInThisJvm, lateLimitSeconds(ceiling));
  }

  private FleetBounds(
      double ceiling,
      String what,
      boolean doorRealTime,
      boolean doorInThisJvm,
      double lateLimitSeconds) {
    if (!(ceiling > 0)) {
      throw new IllegalArgumentException("ceiling " + ceiling + " is not positive");
    }
    this.ceiling = ceiling;
    this.what = what;
    this.doorRealTime = doorRealTime;
    this.doorInThisJvm = doorInThisJvm;
    this.lateLimitSeconds = lateLimitSeconds;
  }

  private static double lateLimitSeconds(double ceiling) {
    return LateTurns.limit(Duration.ofNanos(Math.round(1e9 / ceiling))).toNanos() / 1e9;
  }

  /**
   * These bounds for members whose turns the late-turn rule checks at {@code fleetCeiling}'s
   * interval rather than their own: a process pacing locally at a share of the fleet's ceiling
   * gives up a turn woken half of the fleet's interval late, not half of its own.
   */
  public FleetBounds turnsCheckedAt(double fleetCeiling) {
    return new FleetBounds(
        ceiling, what, doorRealTime, doorInThisJvm, lateLimitSeconds(fleetCeiling));
  }

  /** The bounds at {@code ceiling} per second for a run stamped by {@code door}. */
  public static FleetBounds at(double ceiling, String what, Door door) {
    return new FleetBounds(ceiling, what, door.realTime(), false);
  }

  /** The bounds at {@code ceiling} per second for a run stamped by {@code door}'s door. */
  public static FleetBounds at(double ceiling, String what, DoorExtension door) {
    return at(ceiling, what, door.door());
  }

  /**
   * The bounds at {@code ceiling} per second for a run stamped by a {@link DoorServer} in the
   * test's JVM, whose senders are other JVMs: its stamps are judged at the stalls this JVM met, and
   * at the real-time policy where the system allows it ({@link DoorServer#realTime()}).
   */
  public static FleetBounds at(double ceiling, String what) {
    return new FleetBounds(ceiling, what, DoorServer.realTime(), true);
  }

  /** The most arrivals any 1-s window may hold. */
  public int mostInAWindow() {
    return (int) Math.floor(ceiling) + 1;
  }

  /**
   * The most arrivals any 1-s window of {@code run} may hold: {@link #mostInAWindow()}, and for a
   * door in this JVM the turns of the longest stall {@code s} this JVM met from the run's first
   * arrival to its last as well. A door that stalls for {@code s} stamps the arrivals of that time
   * up to {@code s} late, so a window of stamps may hold the arrivals of {@code 1 + s} seconds; and
   * where {@code s} is longer than the {@link #STAMP_ERROR_SECONDS} that {@code floor(c) + 1}
   * allows beside the late-turn rule's limit, those of {@code 1 + limit + s} seconds: the first
   * arrival of a window may then have been taken that late and stamped that late, the last neither.
   */
  private int mostInAWindow(Timeline run) {
    if (!doorInThisJvm) {
      return mostInAWindow();
    }
    double stall = longestStallSeconds(run);
    double late = stall > STAMP_ERROR_SECONDS ? lateLimitSeconds + stall : stall;
    return (int) Math.floor(ceiling * (1 + late)) + 1;
  }

  /** {@link #STALL_SECONDS}, or the longest stall this JVM met during {@code run} if longer. */
  private static double allowedStallSeconds(Timeline run) {
    return Math.max(STALL_SECONDS, longestStallSeconds(run));
  }

  /** The longest stall this JVM met from {@code run}'s first arrival to its last, in seconds. */
  private static double longestStallSeconds(Timeline run) {
    return JvmStalls.get().longestBetween(run.first(), run.last()) / 1e9;
  }

  /**
   * The highest aggregate rate {@code events} arrivals may show at {@link #STAMP_ERROR_SECONDS} and
   * the late-turn rule's limit: see the class comment.
   */
  public double mostAggregate(int events) {
    return mostAggregate(events, STAMP_ERROR_SECONDS);
  }

  private double mostAggregate(int events, double stampErrorSeconds) {
    double shortest = (events - 1) / ceiling - lateLimitSeconds - stampErrorSeconds;
    return shortest <= 0 ? Double.POSITIVE_INFINITY : (events - 1) / shortest;
  }

  /**
   * The stamp error {@code run} is judged at: {@link #STAMP_ERROR_SECONDS}, or for a door in this
   * JVM the longest stall this JVM met from its first arrival to its last if that is longer.
   */
  private double stampErrorSeconds(Timeline run) {
    if (!doorInThisJvm) {
      return STAMP_ERROR_SECONDS;
    }
    return Math.max(STAMP_ERROR_SECONDS, longestStallSeconds(run));
  }

  /**
   * Asserts the upper bounds: the busiest window over all of {@code run}, the aggregate over all of
   * it too. See {@link #assertHeld(Timeline, Timeline)}.
   */
  public void assertHeld(Timeline run) {
    assertHeld(run, run);
  }

  /**
   * Asserts the upper bounds: the busiest window over {@code run} from its first arrival, the
   * aggregate over {@code steady} (the part of the run in which every member asks without pause, of
   * at least three arrivals).
   */
  public void assertHeld(Timeline run, Timeline steady) {
    String figures = figures(run, steady);
    System.out.println(what + ": " + figures);
    assertThat(steady.size())
        .as("%s: arrivals in the steady part, %s", what, figures)
        .isGreaterThanOrEqualTo(3);
    boolean windowHeld = run.peakOneSecondWindow() <= mostInAWindow(run);
    double mostAggregate = mostAggregate(steady.size(), stampErrorSeconds(run));
    boolean aggregateHeld = steady.aggregateRatePerSecond() <= mostAggregate;
    if (!windowHeld || !aggregateHeld) {
      long step = WallClockSteps.get().largestStepBetween(run.first() - 10 * SECOND, run.last());
      assumeTrue(
          step == 0,
          String.format(
              Locale.ROOT,
              "%s: this host's wall clock stepped %.0f ms"
                  + " forward during the run, and an upper bound broke: %s",
              what,
              step / 1e6,
              figures));
      assumeTrue(
          doorRealTime,
          what
              + ": the door could not run at the real-time policy (chrt"
              + " --fifo needs root or CAP_SYS_NICE), and an upper bound broke: "
              + figures);
    }
    assertThat(run.peakOneSecondWindow())
        .as("%s: busiest 1-s window, %s", what, figures)
        .isLessThanOrEqualTo(mostInAWindow(run));
    assertThat(steady.aggregateRatePerSecond())
        .as("%s: aggregate rate, %s", what, figures)
        .isLessThanOrEqualTo(mostAggregate);
  }

  /**
   * {@link #assertHeld(Timeline, Timeline)} for a run whose requests are each traced from turn to
   * door. The turns themselves, the limiter's work, are held with no excuse: no 1-s window holds
   * more than the door's bound, and no two are closer than half a turn, which two turns handed out
   * as one break while the error of mapping each process's turns onto this clock (a few
   * milliseconds at most) does not. At the door, a broken upper bound is reported as skipped,
   * naming the figures, when a request of a window over the bound reached the door at least half a
   * turn after the limiter handed it to its client: a delay after the check for a late turn (the
   * client's own threads, a pause of the sending JVM), which no check made before the send can see,
   * and which at turns of a few milliseconds moves a request beside the next turn's
   * (docs/reliability.md, "The ceiling at the destination's door", item 8). Without such a request
   * the bounds are as strict as {@link #assertHeld(Timeline, Timeline)}'s.
   */
  public void assertHeld(Timeline run, Timeline steady, TurnTrace trace, List<Arrival> arrivals) {
    assertTracedTurns(trace, arrivals);
    boolean windowHeld = run.peakOneSecondWindow() <= mostInAWindow(run);
    boolean aggregateHeld =
        steady.aggregateRatePerSecond() <= mostAggregate(steady.size(), stampErrorSeconds(run));
    if (!windowHeld || !aggregateHeld) {
      skipIfDelayedAfterHandOver(trace, arrivals, mostInAWindow(run), figures(run, steady));
    }
    assertHeld(run, steady);
  }

  /**
   * Asserts the turns of {@code trace} themselves, the limiter's work, with no excuse: no 1-s
   * window holds more than {@link #mostInAWindow()}, and no two are closer than half a turn.
   */
  public void assertTracedTurns(TurnTrace trace, List<Arrival> arrivals) {
    Timeline turns = trace.turns();
    assertThat(turns.peakOneSecondWindow())
        .as("%s: busiest 1-s window of the turns themselves, %s", what, turns)
        .isLessThanOrEqualTo(mostInAWindow());
    long halfTurn = halfTurnNanos();
    assertThat(turns.shortestGapNanos())
        .as(
            "%s: the shortest gap between two turns, against half a turn (%d ns), %s",
            what, halfTurn, trace.busiestWindow(arrivals))
        .isGreaterThanOrEqualTo(halfTurn);
  }

  /**
   * Reports the run as skipped, naming {@code figures}, when a traced request of a 1-s window of
   * {@code arrivals} holding more than {@code most} reached the door at least half a turn after it
   * was handed to its client: see {@link #assertHeld(Timeline, Timeline, TurnTrace, List)}.
   */
  public void skipIfDelayedAfterHandOver(
      TurnTrace trace, List<Arrival> arrivals, int most, String figures) {
    long halfTurn = halfTurnNanos();
    long afterHandOver = trace.longestAfterHandOverInWindowsOver(arrivals, most);
    assumeTrue(
        afterHandOver < halfTurn,
        String.format(
            Locale.ROOT,
            "%s: a request of a window over the bound reached the door %.1f ms after it was"
                + " handed to its client (half a turn is %.1f ms), a delay after the check for a"
                + " late turn that no check before the send can see (docs/reliability.md), and an"
                + " upper bound broke: %s; %s",
            what,
            afterHandOver / 1e6,
            halfTurn / 1e6,
            figures,
            trace.busiestWindow(arrivals)));
  }

  private long halfTurnNanos() {
    return Math.round(0.5e9 / ceiling);
  }

  /**
   * Asserts that {@code steady} delivered at least {@link #MIN_DELIVERED} times {@code expected}
   * per second: the ceiling, or the share the fleet paces at while degraded.
   */
  public void assertDelivered(Timeline steady, double expected) {
    assertThat(steady.aggregateRatePerSecond())
        .as("%s: delivered rate against %.2f/s, %s", what, expected, steady)
        .isGreaterThanOrEqualTo(MIN_DELIVERED * expected);
  }

  /**
   * {@link #assertDelivered(Timeline, double)} at the ceiling, for a sender whose JVM measured
   * itself stalled ({@link JvmStalls}) for {@code stalledSeconds} of {@code steady}'s span in all:
   * a stalled sender takes no turn, so the rate it should deliver is the ceiling over the rest.
   */
  public void assertDelivered(Timeline steady, double expected, double stalledSeconds) {
    double span = steady.spanSeconds();
    assertDelivered(steady, expected * Math.max(0, span - stalledSeconds) / span);
  }

  /**
   * {@link #assertDelivered(Timeline, double)} for a run that gave up {@code turnsGivenUp} turns as
   * late within {@code steady}: each counts as delivered. A turn given up is the busy host's, not
   * the limiter's, and the late-turn bounds ({@link #assertFewLateTurns}) judge how many.
   */
  public void assertDeliveredBesideGivenUp(Timeline steady, double expected, long turnsGivenUp) {
    double givenUp = turnsGivenUp / steady.spanSeconds();
    assertThat(steady.aggregateRatePerSecond() + givenUp)
        .as(
            "%s: delivered rate against %.2f/s, with %d turn(s) given up as late in it (%.2f/s),"
                + " %s",
            what, expected, turnsGivenUp, givenUp, steady)
        .isGreaterThanOrEqualTo(MIN_DELIVERED * expected);
  }

  /** {@link #assertDelivered(Timeline, double)} at the ceiling. */
  public void assertDelivered(Timeline steady) {
    assertDelivered(steady, ceiling);
  }

  /**
   * Asserts that {@code members}, each paced on a cursor of its own at this ceiling (the members of
   * a degraded fleet), delivered together at least {@link #MIN_DELIVERED} times the ceiling each:
   * the sum of their steady parts' aggregates against the sum of their rates. Not the merged
   * arrivals' aggregate, since the members keep no common phase and over a short span it strays
   * from the sum by up to an interval per member at each end; and not each member alone, since over
   * the few turns of a degraded phase one turn given up looks like one in ten.
   */
  public void assertDeliveredByMembers(List<Timeline> members) {
    assertDeliveredByMembers(members, 0);
  }

  /**
   * {@link #assertDeliveredByMembers(List)} for members that gave up {@code turnsGivenUp} turns as
   * late within their spans, whichever member each was: each counts as delivered, at one turn over
   * the longest member's span (the least it can add to one member's aggregate). A turn given up is
   * the busy host's, not the limiter's, and the late-turn bounds ({@link #assertFewLateTurns})
   * judge how many; without this, over the few turns of a degraded phase, one stall that costs two
   * members a turn each breaks the bound.
   */
  public void assertDeliveredByMembers(List<Timeline> members, long turnsGivenUp) {
    double delivered = members.stream().mapToDouble(Timeline::aggregateRatePerSecond).sum();
    double longest = members.stream().mapToDouble(Timeline::spanSeconds).max().orElse(0);
    double givenUp = turnsGivenUp == 0 ? 0 : turnsGivenUp / longest;
    assertThat(delivered + givenUp)
        .as(
            "%s: delivered by %d members together against %.2f/s each, with %d turn(s) given up"
                + " as late in their spans (%.2f/s), %s",
            what, members.size(), ceiling, turnsGivenUp, givenUp, members)
        .isGreaterThanOrEqualTo(MIN_DELIVERED * ceiling * members.size());
  }

  /**
   * Asserts that at most {@link #mostLateTurns} of {@code turns} were given up as late, for a run
   * that had no stall of this JVM longer than {@link #STALL_SECONDS}.
   */
  public void assertFewLateTurns(long skipped, long turns) {
    assertFewLateTurns(skipped, turns, STALL_SECONDS);
  }

  /**
   * Asserts that at most {@link #mostLateTurns} of {@code turns} were given up as late in a run
   * whose door saw {@code run}: the stall allowed is the longest this JVM met from {@code run}'s
   * first arrival to its last, if longer than {@link #STALL_SECONDS}.
   */
  public void assertFewLateTurns(long skipped, long turns, Timeline run) {
    assertFewLateTurns(skipped, turns, run, 0);
  }

  /**
   * As {@link #assertFewLateTurns(long, long, Timeline)}, for senders in processes of their own
   * that measured their own stalls: the {@code turnsInSendersStalls} those may have cost, summed
   * over the senders, are allowed if more. A sender's process starved of the CPU wakes late for its
   * turns whether or not this JVM was starved at the same moments, and on a machine with fewer
   * cores than runnable threads the processes take turns at being starved.
   */
  public void assertFewLateTurns(
      long skipped, long turns, Timeline run, long turnsInSendersStalls) {
    double stall = allowedStallSeconds(run);
    assertLateTurnsAtMost(
        skipped,
        turns,
        Math.max(mostLateTurns(turns, stall), turnsInSendersStalls),
        String.format(
            Locale.ROOT,
            "a stall of %.0f ms allowed, or %d in the senders' measured stalls",
            stall * 1000,
            turnsInSendersStalls));
  }

  /**
   * Asserts that at most {@link #mostLateTurns} of {@code turns} were given up as late by senders
   * whose JVM measured its own longest stall ({@link JvmStalls}) as {@code stallSeconds}: the turns
   * of that stall are allowed if more than the share or a {@link #STALL_SECONDS} one.
   */
  public void assertFewLateTurns(long skipped, long turns, double stallSeconds) {
    stallSeconds = Math.max(STALL_SECONDS, stallSeconds);
    assertLateTurnsAtMost(
        skipped,
        turns,
        mostLateTurns(turns, stallSeconds),
        String.format(Locale.ROOT, "a stall of %.0f ms allowed", stallSeconds * 1000));
  }

  /**
   * Asserts that at most {@link #mostLateTurns} of {@code turns} were given up as late by senders
   * whose JVM counted {@code turnsInStalls}, the turns its own stalls may have cost ({@link
   * JvmStalls#turnsInStallsBetween}): those are allowed if more than the share or a {@link
   * #STALL_SECONDS} stall's. On one core shared by the database, the door and thousands of the
   * sender's threads, many short stalls each cost a turn, more in all than one long stall would.
   */
  public void assertFewLateTurnsBesideStalls(long skipped, long turns, long turnsInStalls) {
    assertLateTurnsAtMost(
        skipped,
        turns,
        Math.max(mostLateTurns(turns, STALL_SECONDS), turnsInStalls),
        turnsInStalls + " in the sender's measured stalls allowed");
  }

  /**
   * Asserts that at most {@link #mostLateTurns} of {@code turns} were given up as late by {@code
   * workers} processes of {@code threads} fetch threads each, all starting cold on new hosts at
   * once (per-host mode), in a run whose door saw {@code run}. A thread's claim takes a turn that
   * is due at once, and the thread has the new host's work before it: its fetcher made, the body's
   * directory, the first request's second turn reserved on the process's one cursor connection,
   * each process's threads one after another. On a busy machine every thread of a worker may wake
   * late for its first turns, whatever the other workers do: each worker may give up its threads'
   * turns, or a stall's at the ceiling if fewer, at each cold moment; and beside them, the rest of
   * the run what {@link #mostLateTurns} allows any run. Beside, not instead: the cold moments and
   * the rest are different times, and a run that spends the cold allowance at its start may still
   * meet the stall any run may meet later.
   */
  public void assertFewLateTurnsOfColdWorkers(
      long skipped, long turns, int workers, int threads, Timeline run) {
    assertFewLateTurnsOfColdWorkers(skipped, turns, workers, threads, 1, run);
  }

  /**
   * As {@link #assertFewLateTurnsOfColdWorkers(long, long, int, int, Timeline)}, for a run in which
   * the workers start cold together {@code coldMoments} times: at the start, and again at each
   * return of PostgreSQL after an outage, when every worker reconnects at the same retry boundary
   * to a server that has just started, its threads' turns due meanwhile.
   */
  public void assertFewLateTurnsOfColdWorkers(
      long skipped, long turns, int workers, int threads, int coldMoments, Timeline run) {
    assertFewLateTurnsOfColdWorkers(skipped, turns, workers, threads, coldMoments, run, 0);
  }

  /**
   * As {@link #assertFewLateTurnsOfColdWorkers(long, long, int, int, int, Timeline)}, the turns the
   * workers' own measured stalls may have cost ({@code turnsInSendersStalls}, summed over them)
   * allowed if more, as {@link #assertFewLateTurns(long, long, Timeline, long)} allows them.
   */
  public void assertFewLateTurnsOfColdWorkers(
      long skipped,
      long turns,
      int workers,
      int threads,
      int coldMoments,
      Timeline run,
      long turnsInSendersStalls) {
    double stall = allowedStallSeconds(run);
    long perWorker = Math.min(threads, (long) Math.ceil(stall * ceiling));
    long cold = (long) coldMoments * workers * perWorker;
    long rest = mostLateTurns(turns, stall);
    assertLateTurnsAtMost(
        skipped,
        turns,
        Math.max(cold + rest, turnsInSendersStalls),
        String.format(
            Locale.ROOT,
            "%d workers starting cold %d time(s), %d turn(s) each allowed, and %d for the rest of"
                + " the run; or %d in the senders' measured stalls",
            workers,
            coldMoments,
            perWorker,
            rest,
            turnsInSendersStalls));
  }

  private void assertLateTurnsAtMost(long skipped, long turns, long most, String allowed) {
    assertThat(turns).as("%s: turns taken", what).isPositive();
    assertThat(skipped)
        .as(
            "%s: turns given up as late, %d of %d (at most %d, %s)",
            what, skipped, turns, most, allowed)
        .isLessThanOrEqualTo(most);
  }

  /**
   * The most of {@code turns} a fleet may give up as late: {@link #MAX_LATE_SHARE} of them, or the
   * turns of one {@code stallSeconds} stall at the ceiling if that is more.
   */
  public long mostLateTurns(long turns, double stallSeconds) {
    return Math.max(
        (long) Math.floor(MAX_LATE_SHARE * turns), (long) Math.ceil(stallSeconds * ceiling));
  }

  /** For a twin: asserts that the busiest window of {@code run} broke its bound. */
  public void assertWindowBroke(Timeline run) {
    System.out.println(what + " (a twin that must break a bound): " + figures(run, run));
    assertThat(run.peakOneSecondWindow())
        .as("%s: busiest 1-s window, %s", what, run)
        .isGreaterThan(mostInAWindow(run));
  }

  /** For a twin: asserts that the aggregate of {@code steady} broke its bound. */
  public void assertAggregateBroke(Timeline steady) {
    System.out.println(what + " (a twin that must break a bound): " + figures(steady, steady));
    assertThat(steady.aggregateRatePerSecond())
        .as("%s: aggregate rate, %s", what, steady)
        .isGreaterThan(mostAggregate(steady.size(), stampErrorSeconds(steady)));
  }

  /** For a twin: asserts that {@code steady} delivered below the bound of the delivered rate. */
  public void assertDeliveredBroke(Timeline steady, double expected) {
    System.out.println(what + " (a twin that must break a bound): " + steady);
    assertThat(steady.aggregateRatePerSecond())
        .as("%s: delivered rate against %.2f/s, %s", what, expected, steady)
        .isLessThan(MIN_DELIVERED * expected);
  }

  private String figures(Timeline run, Timeline steady) {
    return String.format(
        Locale.ROOT,
        "%d arrivals over %.3f s, busiest 1-s window %d (at most %d),"
            + " per second %s; steady part %d arrivals at %.3f/s (at most %.3f, delivered at least"
            + " %.3f at the ceiling); spread about the grid %.1f ms (late-turn limit %.1f ms,"
            + " stamp error %.1f ms); door at real-time policy %s",
        run.size(),
        run.spanSeconds(),
        run.peakOneSecondWindow(),
        mostInAWindow(run),
        perSecond(run),
        steady.size(),
        steady.aggregateRatePerSecond(),
        mostAggregate(steady.size(), stampErrorSeconds(run)),
        MIN_DELIVERED * ceiling,
        steady.gridSpreadSeconds(ceiling) * 1000,
        lateLimitSeconds * 1000,
        stampErrorSeconds(run) * 1000,
        doorRealTime);
  }

  private static List<Integer> perSecond(Timeline run) {
    List<Integer> counts = new ArrayList<>();
    for (long t : run.instantsFrom(run.first())) {
      int second = (int) ((t - run.first()) / SECOND);
      while (counts.size() <= second) {
        counts.add(0);
      }
      counts.set(second, counts.get(second) + 1);
    }
    return counts;
  }
}
