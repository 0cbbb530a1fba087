package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link Cursor} must have, run against each implementation (as Bucket4j runs
 * one suite against every backend). Nothing sleeps: reservations only compute waits.
 *
 * <p>Each backend names the clock its cursor's "now" moves with ({@link #clock()}), and every
 * expected wait allows exactly the time that clock says passed since the sequence began: a
 * reservation's wait is its turn minus the cursor's now, and that now can have moved on by no more
 * than the caller saw. A local cursor on {@link FakeTime} sees none, so its waits are asserted
 * exactly; a database's cursor reads the server's clock on the same host, and its waits may fall
 * short of the ideal by the measured time of the calls, never by more, and never exceed it.
 */
public abstract class CursorContract {

  private static final Duration GAP = Duration.ofMillis(100);

  protected abstract Cursor cursor();

  /** The clock the cursor's "now" advances with, as this process can read it. */
  protected abstract TimeSource clock();

  protected String freshName() {
    return "contract-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Where the current sequence of reservations began, on {@link #clock()}. */
  private long sequenceStart;

  private void startSequence() {
    sequenceStart = clock().nanoTime();
  }

  /**
   * The wait is {@code ideal} less at most the time passed since {@link #startSequence()}: the
   * cursor's now cannot have moved further than that between the sequence's reservations.
   */
  private void assertWait(Reservation r, Duration ideal, String what) {
    long elapsed = clock().nanoTime() - sequenceStart;
    assertThat(r.isGranted()).as("%s granted: %s", what, r).isTrue();
    Duration lowest = ideal.minusNanos(elapsed);
    assertThat(r.waitTime()).as("%s (%d us passed)", what, elapsed / 1000)
        .isBetween(lowest.isNegative() ? Duration.ZERO : lowest, ideal);
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
    assertWait(cursor().reserve(name, Duration.ofMillis(100)), Duration.ZERO, "first");
    assertWait(cursor().reserve(name, Duration.ofMillis(800)), Duration.ofMillis(100), "widened");
    assertWait(cursor().reserve(name, Duration.ofMillis(100)), Duration.ofMillis(900), "after it");
    assertWait(cursor().reserve(name, Duration.ofMillis(100)), Duration.ofMillis(1000), "next");
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
    assertThat(cursor().pause(name, Duration.ofSeconds(2))).as("recorded").isTrue();
    assertWait(cursor().reserve(name, GAP), Duration.ofSeconds(2), "the first after the pause");
    assertWait(cursor().reserve(name, GAP), Duration.ofMillis(2100), "the next");
  }

  /**
   * A store's reset bound takes a cursor far ahead of now for a corrupt one; a recorded pause
   * explains it. The longest pause any destination may ask for is longer than the default bound.
   * (A pause that is the cursor alone, in the key/value layout, cannot be told from a corrupt
   * cursor: there the bound must exceed the destinations' {@code maxRetryAfter}.)
   */
  @Test
  void theLongestPauseADestinationMayAskForSurvivesTheNextReservation() {
    assumeTrue(recordsHolds(), "this layout records no pauses");
    String name = freshName();
    Duration longest = Destination.LONGEST_RETRY_AFTER;
    startSequence();
    assertWait(cursor().reserve(name, GAP), Duration.ZERO, "first");
    assertThat(cursor().pause(name, longest)).as("recorded").isTrue();
    assertWait(cursor().reserve(name, GAP), longest, "the first after the pause");
    assertWait(cursor().reserve(name, GAP), longest.plus(GAP), "the next");
  }

  @Test
  void aPauseShorterThanTheQueueLeavesItAlone() {
    String name = freshName();
    startSequence();
    for (int i = 0; i < 3; i++) {
      cursor().reserve(name, GAP);
    }
    cursor().pause(name, Duration.ofMillis(100));
    assertWait(cursor().reserve(name, GAP), Duration.ofMillis(300), "the queue's next turn");
  }

  @Test
  void aPauseOfAFreshCursorStartsItAfterThePause() {
    String name = freshName();
    startSequence();
    cursor().pause(name, Duration.ofSeconds(1));
    assertWait(cursor().reserve(name, GAP), Duration.ofSeconds(1), "first");
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
    assertThat(refused.lockoutReason()).as("the first reason is kept")
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
    cursor().listen(name, new Cursor.Listener() {
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
    assertThat(lockedOut.await(5, java.util.concurrent.TimeUnit.SECONDS)).as("lockout heard")
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
    Cursor.Listener removed = new Cursor.Listener() {
      @Override
      public void paused(Duration left) {
        removedHeard.add(left);
      }

      @Override
      public void lockedOut(String reason) {}
    };
    cursor().listen(name, removed);
    cursor().listen(name, new Cursor.Listener() {
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
    assertThat(keptHeard.await(5, java.util.concurrent.TimeUnit.SECONDS)).as("pause heard")
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
    assertWait(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 0),
        GAP.multipliedBy(5), "then by four gaps");
    assertThat(cursor().reserve(name, GAP).isGranted()).as("a plain reservation still works")
        .isTrue();
  }

  @Test
  void aHundredCleanAnswersAnywhereHalveTheFleetsBackoff() {
    assumeTrue(cursor().keepsFleetBackoff(), "this layout keeps no fleet backoff");
    String name = freshName();
    cursor().throttled(name);
    cursor().throttled(name);
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 60)
        .fleetBackoff()).hasValue(4);
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, Duration.ZERO, 50)
        .isRefused()).as("a refused try counts nothing").isTrue();
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 40)
        .fleetBackoff()).as("100 counted").hasValue(2);
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 99)
        .fleetBackoff()).hasValue(2);
    assertThat(cursor().throttled(name)).as("a rate answer restarts the count").hasValue(4);
    assertThat(cursor().reserveUnderFleetBackoff(name, GAP, Duration.ZERO, null, 1)
        .fleetBackoff()).hasValue(4);
  }

  @Test
  void tryReserveRefusesWithoutConsumingATurn() {
    String name = freshName();
    startSequence();
    for (int i = 0; i < 3; i++) {
      cursor().reserve(name, GAP); // the next turn starts 300 ms ahead, less the time passed
    }
    Reservation refused = cursor().tryReserve(name, GAP, Duration.ofMillis(200));
    assertThat(refused.isRefused()).as("refused: %s", refused).isTrue();
    assertThat(cursor().tryReserve(name, GAP, Duration.ofMillis(200)).isRefused()).isTrue();
    assertWait(cursor().tryReserve(name, GAP, Duration.ofSeconds(1)), Duration.ofMillis(300),
        "the refusals left the cursor where it was");
  }

  @Test
  void notBeforeOnlyPlacesACursorThatIsMissing() {
    String name = freshName();
    startSequence();
    assertWait(cursor().reserve(name, GAP, Duration.ofMillis(500)), Duration.ofMillis(500),
        "a missing cursor starts at notBefore, from the call");
    assertWait(cursor().reserve(name, GAP, Duration.ofMillis(900)), Duration.ofMillis(600),
        "an intact cursor ignores it");
    cursor().clear(name);
    startSequence();
    assertWait(cursor().reserve(name, GAP, Duration.ofMillis(700)), Duration.ofMillis(700),
        "a lost cursor does not hand out turns before it");
    assertThat(cursor().tryReserve(freshName(), GAP, Duration.ofSeconds(2), Duration.ofSeconds(1))
        .isRefused()).as("it counts against maxWait").isTrue();
  }

  @Test
  void tryReserveOnAFreshCursorIsGrantedAtOnce() {
    Reservation r = cursor().tryReserve(freshName(), GAP, Duration.ZERO);
    assertThat(r.isGranted()).as("granted: %s", r).isTrue();
    assertThat(r.waitTime()).isZero();
  }

  @Test
  void concurrentReservationsNeverShareATurn() throws Exception {
    String name = freshName();
    // A turn starts its wait after the call returns. The cursor read its now somewhere inside
    // the call and a remote cursor places the turn within it, so a start is off by at most that
    // call's duration either way, and two consecutive starts are at least the gap less twice the
    // longest call apart. A non-atomic cursor hands two callers the same turn (0 apart).
    Duration gap = Duration.ofMillis(200);
    int threads = 4;
    int each = 10;
    List<Long> starts = Collections.synchronizedList(new ArrayList<>());
    List<Long> calls = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(pool.submit(() -> {
          go.await();
          for (int i = 0; i < each; i++) {
            long before = clock().nanoTime();
            Reservation r = cursor().reserve(name, gap);
            long after = clock().nanoTime();
            calls.add(after - before);
            starts.add(after + r.waitTime().toNanos());
          }
          return null;
        }));
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    Collections.sort(starts);
    long longestCall = Collections.max(calls);
    assertThat(starts).hasSize(threads * each);
    for (int i = 1; i < starts.size(); i++) {
      assertThat(starts.get(i) - starts.get(i - 1))
          .as("turn %d after turn %d (longest call %d us)", i, i - 1, longestCall / 1000)
          .isGreaterThanOrEqualTo(gap.toNanos() - 2 * longestCall);
    }
  }
}
