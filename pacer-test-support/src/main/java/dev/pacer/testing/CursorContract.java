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
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link Cursor} must have, run against each implementation (as Bucket4j runs
 * one suite against every backend): the turn arithmetic ({@link TurnContract}), and the rest of the
 * cursor's word: clearing, the holds (pauses the store records, lockouts, their listeners), the
 * fleet's backoff and where a lost cursor restarts.
 */
public abstract class CursorContract extends TurnContract {

  @Test
  void clearForgets() {
    String name = freshName();
    cursor().reserve(name, Duration.ofSeconds(10));
    cursor().clear(name);
    assertThat(cursor().reserve(name, GAP).waitTime()).isZero();
  }

  /**
   * Whether this cursor's store records its holds, pauses and lockouts, beside the cursor and
   * announces them (the key/value layout has nowhere to record them, and so announces nothing: its
   * pause is the cursor alone).
   */
  protected boolean recordsHolds() {
    return true;
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
    // Recorded, or the listener has nothing to hear: a failure then names the write, not the ear.
    assertThat(cursor().lockOut(name, "HTTP 403")).as("lockout recorded").isTrue();
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
}
