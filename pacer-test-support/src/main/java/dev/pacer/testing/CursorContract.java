package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pacer.BackoffScope;
import dev.pacer.Destination;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link Cursor} must have, run against each implementation (as Bucket4j runs
 * one suite against every backend). Nothing sleeps: reservations only compute waits.
 *
 * <p>Each backend hands its cursor a {@link TurnClock} ({@link #clock()}), so every granted turn's
 * start is known on that clock exactly, however long the calls took or wherever the scheduler held
 * the threads. A sequence's turns are then asserted where they must start from its first turn, to
 * within the backend's {@link #turnTolerance()}: none for a local cursor, and for a cursor that
 * maps another clock onto this one the error of that mapping. Only the first turn of a sequence is
 * placed against the calls themselves, as an instant inside them.
 */
public abstract class CursorContract {

  /**
   * The gap between turns: long beside the calls, so that a sequence's reservations all come before
   * the turns they queue behind, and the cursor's now cannot overtake its queue.
   */
  private static final Duration GAP = Duration.ofSeconds(1);

  /** How many threads reserve at once in {@link #assertConcurrentReservationsNeverShareATurn}. */
  public static final int CONCURRENT_CALLERS = 4;

  protected abstract Cursor cursor();

  /** The clock the cursor reads its now from, or maps its now onto. */
  protected abstract TurnClock clock();

  /**
   * How far, either way, a turn's start on {@link #clock()} may be from where the cursor's own
   * arithmetic puts it: zero when the cursor computes on that clock; for a cursor that computes on
   * another, how far the mapping of that clock onto this one can err. A fixed figure: it must not
   * grow with the time the calls take.
   */
  protected abstract Duration turnTolerance();

  /**
   * Readies the cursor before each test, so that {@link #turnTolerance()} holds from the test's
   * first turn: a cursor that maps another clock onto {@link #clock()} settles its mapping here.
   */
  protected void settleClock() {}

  @BeforeEach
  final void settleTheClock() {
    settleClock();
  }

  protected String freshName() {
    return "contract-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** This clock's reading just before the current sequence's first call. */
  private long sequenceCalled;

  /** The start of the current sequence's first turn, and the wait it was asserted at. */
  private long firstStart;

  private Duration firstIdeal;

  private void startSequence() {
    firstIdeal = null;
    sequenceCalled = clock().nanoTime();
  }

  /**
   * The turn starts {@code ideal} after the sequence's origin: the instant its first call read the
   * cursor's now. The first turn asserted fixes the origin, and must lie {@code ideal} after some
   * instant of the calls since {@link #startSequence()}; every later one starts exactly where its
   * {@code ideal} puts it from the first, give or take {@link #turnTolerance()}.
   */
  private void assertWait(Reservation r, Duration ideal, String what) {
    assertThat(r.isGranted()).as("%s granted: %s", what, r).isTrue();
    long start = clock().startOf(r);
    long tolerance = turnTolerance().toNanos();
    if (firstIdeal == null) {
      long answered = clock().lastRead();
      assertThat(start)
          .as(
              "%s: a turn %s after an instant of the calls (%d us long)",
              what, ideal, (answered - sequenceCalled) / 1000)
          .isBetween(
              sequenceCalled + ideal.toNanos() - tolerance, answered + ideal.toNanos() + tolerance);
      firstStart = start;
      firstIdeal = ideal;
      return;
    }
    long expected = firstStart + ideal.minus(firstIdeal).toNanos();
    assertThat(start - expected)
        .as(
            "%s: ns from %s after the first turn (the first at %s; %d ms since the first call)",
            what, ideal, firstIdeal, (clock().lastRead() - sequenceCalled) / 1_000_000)
        .isBetween(-tolerance, tolerance);
  }

  @Test
  void freshCursorAnswersZeroThenTheGap() {
    String name = freshName();
    startSequence();
    assertWait(cursor().reserve(name, GAP), Duration.ZERO, "first");
    assertWait(cursor().reserve(name, GAP), GAP, "second");
    assertWait(cursor().reserve(name, GAP), GAP.multipliedBy(2), "third");
  }

  @Test
  void twoDestinationsDoNotShare() {
    String a = freshName();
    String b = freshName();
    cursor().reserve(a, GAP);
    cursor().reserve(a, GAP);
    assertThat(cursor().reserve(b, GAP).waitTime()).isZero();
  }

  @Test
  void clearForgets() {
    String name = freshName();
    cursor().reserve(name, Duration.ofSeconds(10));
    cursor().clear(name);
    assertThat(cursor().reserve(name, GAP).waitTime()).isZero();
  }

  @Test
  void aWidenedIntervalIsHonoured() {
    String name = freshName();
    startSequence();
    assertWait(cursor().reserve(name, GAP), Duration.ZERO, "first");
    assertWait(cursor().reserve(name, GAP.multipliedBy(8)), GAP, "widened");
    assertWait(cursor().reserve(name, GAP), GAP.multipliedBy(9), "after it");
    assertWait(cursor().reserve(name, GAP), GAP.multipliedBy(10), "next");
  }

  /**
   * Whether this cursor's store records its holds, pauses and lockouts, beside the cursor and
   * announces them (the key/value layout has nowhere to record them, and so announces nothing: its
   * pause is the cursor alone).
   */
  protected boolean recordsHolds() {
    return true;
  }

  @Test
  void aPauseHoldsTheNextTurnsUntilItEnds() {
    String name = freshName();
    startSequence();
    assertWait(cursor().reserve(name, GAP), Duration.ZERO, "first");
    startSequence();
    Duration pause = GAP.multipliedBy(2);
    assertThat(cursor().pause(name, pause)).as("recorded").isTrue();
    assertWait(cursor().reserve(name, GAP), pause, "the first after the pause");
    assertWait(cursor().reserve(name, GAP), pause.plus(GAP), "the next");
  }

  /**
   * A store's reset bound takes a cursor far ahead of now for a corrupt one; a recorded pause
   * explains it. The longest pause any destination may ask for is longer than the default bound. (A
   * pause that is the cursor alone, in the key/value layout, cannot be told from a corrupt cursor:
   * there the bound must exceed the destinations' {@code maxRetryAfter}.)
   */
  @Test
  void theLongestPauseADestinationMayAskForSurvivesTheNextReservation() {
    assumeTrue(recordsHolds(), "this layout records no pauses");
    String name = freshName();
    Duration longest = Destination.LONGEST_RETRY_AFTER;
    startSequence();
    assertWait(cursor().reserve(name, GAP), Duration.ZERO, "first");
    startSequence();
    assertThat(cursor().pause(name, longest)).as("recorded").isTrue();
    assertWait(cursor().reserve(name, GAP), longest, "the first after the pause");
    assertWait(cursor().reserve(name, GAP), longest.plus(GAP), "the next");
  }

  @Test
  void aPauseShorterThanTheQueueLeavesItAlone() {
    String name = freshName();
    startSequence();
    for (int i = 0; i < 3; i++) {
      assertWait(cursor().reserve(name, GAP), GAP.multipliedBy(i), "queued");
    }
    cursor().pause(name, GAP);
    assertWait(cursor().reserve(name, GAP), GAP.multipliedBy(3), "the queue's next turn");
  }

  @Test
  void aPauseOfAFreshCursorStartsItAfterThePause() {
    String name = freshName();
    startSequence();
    cursor().pause(name, GAP);
    assertWait(cursor().reserve(name, GAP), GAP, "first");
  }

  @Test
  void aLockoutRefusesEveryReservationUntilCleared() {
    String name = freshName();
    cursor().reserve(name, GAP);
    boolean recorded = cursor().lockOut(name, "HTTP 403 from https://example.org/a");
    assertThat(recorded).isEqualTo(recordsHolds());
    if (!recorded) {
      assertThat(cursor().reserve(name, GAP).isGranted()).as("nothing recorded").isTrue();
      return;
    }
    cursor().lockOut(name, "a later reason");
    Reservation refused = cursor().reserve(name, GAP);
    assertThat(refused.isLockedOut()).as("%s", refused).isTrue();
    assertThat(refused.lockoutReason())
        .as("the first reason is kept")
        .isEqualTo("HTTP 403 from https://example.org/a");
    assertThat(cursor().tryReserve(name, GAP, Duration.ofSeconds(5)).isLockedOut()).isTrue();
    assertThat(cursor().reserve(freshName(), GAP).isGranted()).as("another destination").isTrue();
    cursor().clearLockout(name);
    assertThat(cursor().reserve(name, GAP).isGranted()).as("after the ack").isTrue();
  }

  @Test
  void aListenerHearsPausesAndLockouts() throws Exception {
    String name = freshName();
    CountDownLatch paused = new CountDownLatch(1);
    CountDownLatch lockedOut = new CountDownLatch(1);
    List<Duration> pauses = Collections.synchronizedList(new ArrayList<>());
    cursor()
        .listen(
            name,
            new Cursor.Listener() {
              @Override
              public void paused(Duration left) {
                pauses.add(left);
                paused.countDown();
              }

              @Override
              public void lockedOut(String reason) {
                if (reason.equals("HTTP 403")) {
                  lockedOut.countDown();
                }
              }
            });
    cursor().reserve(name, GAP);
    cursor().pause(name, Duration.ofSeconds(3));
    if (!recordsHolds()) {
      // Nothing recorded apart from the cursor, so nothing announced: a notification is only
      // ever a wake-up to read a record.
      cursor().lockOut(name, "HTTP 403");
      assertThat(paused.await(500, java.util.concurrent.TimeUnit.MILLISECONDS)).isFalse();
      assertThat(lockedOut.getCount()).as("lockout heard").isOne();
      return;
    }
    assertThat(paused.await(5, java.util.concurrent.TimeUnit.SECONDS)).as("pause heard").isTrue();
    assertThat(pauses.get(0)).isBetween(Duration.ofSeconds(2), Duration.ofSeconds(3));
    cursor().lockOut(name, "HTTP 403");
    assertThat(lockedOut.await(5, java.util.concurrent.TimeUnit.SECONDS))
        .as("lockout heard")
        .isTrue();
    cursor().clearLockout(name);
  }

  /**
   * Two listeners of one destination, the first removed: the second hears the pause, the first
   * nothing. The listeners of a destination are told in the order they were added, so by the time
   * the second has heard, the first would have too.
   */
  @Test
  void aListenerRemovedHearsNothingMore() throws Exception {
    assumeTrue(recordsHolds(), "this layout records no holds, so announces nothing to hear");
    String name = freshName();
    List<Duration> removedHeard = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch keptHeard = new CountDownLatch(1);
    Cursor.Listener removed =
        new Cursor.Listener() {
          @Override
          public void paused(Duration left) {
            removedHeard.add(left);
          }

          @Override
          public void lockedOut(String reason) {}
        };
    cursor().listen(name, removed);
    cursor()
        .listen(
            name,
            new Cursor.Listener() {
              @Override
              public void paused(Duration left) {
                keptHeard.countDown();
              }

              @Override
              public void lockedOut(String reason) {}
            });
    cursor().unlisten(name, removed);
    cursor().reserve(name, GAP);
    cursor().pause(name, Duration.ofSeconds(3));
    assertThat(keptHeard.await(5, java.util.concurrent.TimeUnit.SECONDS))
        .as("pause heard")
        .isTrue();
    assertThat(removedHeard).as("heard by the listener removed").isEmpty();
  }

  @Test
  void theFleetsBackoffSpacesEveryTurnFromTheNextOn() {
    assumeTrue(cursor().keepsFleetBackoff(), "this layout keeps no fleet backoff");
    String name = freshName();
    startSequence();
    Reservation first = cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 0);
    assertWait(first, Duration.ZERO, "first");
    assertThat(first.fleetBackoff()).hasValue(1);
    assertThat(cursor().throttled(name)).hasValue(2);
    assertThat(cursor().throttled(name)).hasValue(4);
    Reservation widened = cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 0);
    assertWait(widened, GAP, "spaced by the gap the first turn used");
    assertThat(widened.fleetBackoff()).hasValue(4);
    assertWait(
        cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 0),
        GAP.multipliedBy(5),
        "then by four gaps");
    assertThat(cursor().reserve(name, GAP).isGranted())
        .as("a plain reservation still works")
        .isTrue();
  }

  @Test
  void theFleetsBackoffDoublesToItsCapAndHalvesToOne() {
    assumeTrue(cursor().keepsFleetBackoff(), "this layout keeps no fleet backoff");
    String name = freshName();
    int expected = 1;
    for (int i = 0; i < 6; i++) {
      expected = Math.min(BackoffScope.MAX_MULTIPLIER, expected * 2);
      assertThat(cursor().throttled(name)).as("rate answer %d", i + 1).hasValue(expected);
    }
    assertThat(expected).isEqualTo(16);
    for (int i = 0; i < 6; i++) {
      expected = Math.max(1, expected / 2);
      assertThat(
              cursor()
                  .reserveUnderFleetBackoff(
                      name, GAP, Duration.ZERO, null, BackoffScope.CLEAN_ANSWERS_TO_HALVE)
                  .fleetBackoff())
          .as("halving %d", i + 1)
          .hasValue(expected);
    }
    assertThat(expected).isEqualTo(1);
  }

  @Test
  void aHundredCleanAnswersAnywhereHalveTheFleetsBackoff() {
    assumeTrue(cursor().keepsFleetBackoff(), "this layout keeps no fleet backoff");
    String name = freshName();
    cursor().throttled(name);
    cursor().throttled(name);
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 60).fleetBackoff())
        .hasValue(4);
    assertThat(
            cursor()
                .reserveUnderFleetBackoff(name, GAP, Duration.ZERO, Duration.ZERO, 50)
                .isRefused())
        .as("a refused try counts nothing")
        .isTrue();
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 40).fleetBackoff())
        .as("100 counted")
        .hasValue(2);
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 99).fleetBackoff())
        .hasValue(2);
    assertThat(cursor().throttled(name)).as("a rate answer restarts the count").hasValue(4);
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 1).fleetBackoff())
        .hasValue(4);
  }

  @Test
  void tryReserveRefusesWithoutConsumingATurn() {
    String name = freshName();
    startSequence();
    for (int i = 0; i < 3; i++) {
      assertWait(cursor().reserve(name, GAP), GAP.multipliedBy(i), "queued");
    }
    Reservation refused = cursor().tryReserve(name, GAP, GAP.multipliedBy(2));
    assertThat(refused.isRefused()).as("refused: %s", refused).isTrue();
    assertThat(cursor().tryReserve(name, GAP, GAP.multipliedBy(2)).isRefused()).isTrue();
    assertWait(
        cursor().tryReserve(name, GAP, GAP.multipliedBy(10)),
        GAP.multipliedBy(3),
        "the refusals left the cursor where it was");
  }

  @Test
  void notBeforeOnlyPlacesACursorThatIsMissing() {
    String name = freshName();
    startSequence();
    assertWait(
        cursor().reserve(name, GAP, Duration.ofMillis(500)),
        Duration.ofMillis(500),
        "a missing cursor starts at notBefore, from the call");
    assertWait(
        cursor().reserve(name, GAP, GAP.multipliedBy(2)),
        GAP.plusMillis(500),
        "an intact cursor ignores it");
    cursor().clear(name);
    startSequence();
    assertWait(
        cursor().reserve(name, GAP, Duration.ofMillis(700)),
        Duration.ofMillis(700),
        "a lost cursor does not hand out turns before it");
    assertThat(
            cursor()
                .tryReserve(freshName(), GAP, Duration.ofSeconds(2), Duration.ofSeconds(1))
                .isRefused())
        .as("it counts against maxWait")
        .isTrue();
  }

  @Test
  void tryReserveOnAFreshCursorIsGrantedAtOnce() {
    Reservation r = cursor().tryReserve(freshName(), GAP, Duration.ZERO);
    assertThat(r.isGranted()).as("granted: %s", r).isTrue();
    assertThat(r.waitTime()).isZero();
  }

  @Test
  void concurrentReservationsNeverShareATurn() throws Exception {
    assertConcurrentReservationsNeverShareATurn(cursor(), clock(), turnTolerance());
  }

  /**
   * {@link #CONCURRENT_CALLERS} threads reserve ten turns each of one destination at once, a gap
   * apart: on {@code clock} every two turns' starts must be at least the gap less {@code tolerance}
   * apart. A cursor that hands two callers one turn puts them as good as 0 apart.
   *
   * @param cursor the cursor, reading or mapping its now onto {@code clock}
   * @param clock the clock the cursor reads
   * @param tolerance how far the cursor may place a turn from its own arithmetic, on {@code clock}
   * @throws AssertionError if two turns are closer, or one is not granted
   * @throws Exception if a thread cannot be run
   */
  public static void assertConcurrentReservationsNeverShareATurn(
      Cursor cursor, TurnClock clock, Duration tolerance) throws Exception {
    String name = "contract-" + UUID.randomUUID().toString().substring(0, 8);
    Duration gap = Duration.ofMillis(200);
    int threads = CONCURRENT_CALLERS;
    int each = 10;
    List<Long> starts = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(
            pool.submit(
                () -> {
                  go.await();
                  for (int i = 0; i < each; i++) {
                    Reservation r = cursor.reserve(name, gap);
                    assertThat(r.isGranted()).as("granted: %s", r).isTrue();
                    starts.add(clock.startOf(r));
                  }
                  return null;
                }));
      }
      go.countDown();
      for (Future<?> f : done) {
        try {
          f.get();
        } catch (java.util.concurrent.ExecutionException e) {
          if (e.getCause() instanceof AssertionError failed) {
            throw failed;
          }
          throw e;
        }
      }
    } finally {
      pool.shutdownNow();
    }
    Collections.sort(starts);
    assertThat(starts).hasSize(threads * each);
    for (int i = 1; i < starts.size(); i++) {
      assertThat(starts.get(i) - starts.get(i - 1))
          .as("ns from turn %d to turn %d, a gap of %s less %s at least", i - 1, i, gap, tolerance)
          .isGreaterThanOrEqualTo(gap.minus(tolerance).toNanos());
    }
  }
}
