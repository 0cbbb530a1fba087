package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.testing.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Leases of turns ({@link TurnLease}), observed on a fake clock through the limiter: how many turns
 * a reservation leases, the spacing of the turns handed out, a leased turn too late given up, and a
 * pause, a backoff or a lockout cutting a lease short. One caller asks at 100/s on a cursor that
 * answers at once, so the lease's horizon, 50 ms, is what it covers: five asks' worth.
 */
class TurnLeaseTest {

  private static final long GAP_MILLIS = 10;
  private static final long MS = 1_000_000;

  private final FakeTime time = new FakeTime();
  private final LocalCursor sharedStandIn = new LocalCursor(time);
  private final RecordingCursor shared = new RecordingCursor(sharedStandIn);

  private DestinationLimiter limiter(int maxLeasedTurns) {
    Destination d =
        Destination.builder("leased")
            .ratePerSecond(1000.0 / GAP_MILLIS)
            .maxConcurrency(1)
            .maxLeasedTurns(maxLeasedTurns)
            .leaseHorizon(Duration.ofMillis(50))
            .build();
    return new LimiterRegistry(shared, time).limiter(d);
  }

  /** Takes {@code n} turns one after the other, as a caller that asks again at once does. */
  private List<Long> turns(DestinationLimiter limiter, int n) throws InterruptedException {
    List<Long> turns = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      try (Slot slot = limiter.acquire()) {
        turns.add(slot.turnNanos());
        assertThat(time.nanoTime() - slot.turnNanos())
            .as("turn %d handed out late", i)
            .isLessThanOrEqualTo(LateTurns.limitNanos(Duration.ofMillis(GAP_MILLIS)));
      }
    }
    return turns;
  }

  private static void assertExactlySpaced(List<Long> turns, long gapMillis) {
    for (int i = 1; i < turns.size(); i++) {
      assertThat(turns.get(i) - turns.get(i - 1))
          .as("gap before turn %d", i)
          .isEqualTo(gapMillis * MS);
    }
  }

  @Test
  void aBusyCallerLeasesItsDemandOverTheHorizonAndTheTurnsAreExactlySpaced() throws Exception {
    DestinationLimiter limiter = limiter(8);
    List<Long> turns = turns(limiter, 40);

    assertExactlySpaced(turns, GAP_MILLIS);
    // The first ask is the only one in the horizon: one turn. The asks then fill the horizon,
    // five of them at 100/s, and each lease takes what is not already in hand.
    List<Long> asked = shared.intervalsMillis();
    assertThat(asked.get(0)).isEqualTo(GAP_MILLIS);
    assertThat(asked.subList(asked.size() - 4, asked.size()))
        .allSatisfy(ms -> assertThat(ms).isEqualTo(5 * GAP_MILLIS));
    assertThat(asked.stream().mapToLong(Long::longValue).sum())
        .as("every turn reserved was taken or is in hand")
        .isEqualTo((40 + leasedTurnsAhead(limiter)) * GAP_MILLIS);
    assertThat(asked.size()).as("reservations for 40 turns").isLessThanOrEqualTo(12);
    assertThat(limiter.leasedTurnsUnused()).isZero();
    assertThat(limiter.lateTurnsSkipped()).isZero();
  }

  @Test
  void theLeaseIsBoundedByItsMaximum() throws Exception {
    DestinationLimiter limiter = limiter(3);
    assertExactlySpaced(turns(limiter, 30), GAP_MILLIS);
    assertThat(shared.intervalsMillis()).allSatisfy(ms -> assertThat(ms).isLessThanOrEqualTo(30));
    assertThat(shared.intervalsMillis()).contains(3 * GAP_MILLIS);
  }

  @Test
  void aQuietCallerTakesOneTurnAReservation() throws Exception {
    DestinationLimiter limiter = limiter(8);
    for (int i = 0; i < 10; i++) {
      limiter.acquire().close();
      time.advance(Duration.ofMillis(30));
    }
    assertThat(shared.intervalsMillis()).hasSize(10).containsOnly(GAP_MILLIS);
  }

  @Test
  void withoutLeasesEveryTurnIsAReservation() throws Exception {
    DestinationLimiter limiter = limiter(1);
    assertExactlySpaced(turns(limiter, 20), GAP_MILLIS);
    assertThat(shared.intervalsMillis()).hasSize(20).containsOnly(GAP_MILLIS);
  }

  @Test
  void leasedTurnsNotTakenInTimeAreGivenUpNeverHandedOutLate() throws Exception {
    DestinationLimiter limiter = limiter(8);
    busyUntilTheLeaseHolds(limiter, 2);
    int reservations = shared.intervalsMillis().size();
    long lastLeased = leasedTurnsAhead(limiter);
    assertThat(lastLeased).as("turns in hand after a busy spell").isPositive();

    // The caller falls quiet past every turn in hand: none is handed out; the next turn is a
    // reservation of its own, now.
    time.advance(Duration.ofMillis(200));
    long asked = time.nanoTime();
    try (Slot slot = limiter.acquire()) {
      assertThat(slot.turnNanos()).isEqualTo(asked);
    }
    assertThat(limiter.leasedTurnsUnused()).isEqualTo(lastLeased);
    assertThat(shared.intervalsMillis()).hasSize(reservations + 1);
  }

  @Test
  void leasedTurnsLeftInHandCountAsUnusedOnceTheyPassWithoutAnotherAsk() throws Exception {
    DestinationLimiter limiter = limiter(8);
    busyUntilTheLeaseHolds(limiter, 2);
    long lastLeased = leasedTurnsAhead(limiter);
    assertThat(limiter.leasedTurnsUnused()).as("turns in hand still to come").isZero();

    time.advance(Duration.ofMillis(200));
    assertThat(limiter.leasedTurnsUnused()).isEqualTo(lastLeased);
    assertThat(leasedTurnsAhead(limiter)).isZero();
  }

  @Test
  void aLeasedTurnWokenForTooLateIsGivenUpAndTheNextLeasedOneTaken() throws Exception {
    DestinationLimiter limiter = limiter(8);
    busyUntilTheLeaseHolds(limiter, 2);
    int reservations = shared.intervalsMillis().size();
    assertThat(leasedTurnsAhead(limiter)).isGreaterThanOrEqualTo(2);
    long before = time.nanoTime();
    // The sleep towards the next leased turn ends 8 ms late, over half the 10-ms gap.
    time.duringNextSleep(() -> time.advance(Duration.ofMillis(8)));
    try (Slot slot = limiter.acquire()) {
      assertThat(slot.turnNanos()).isEqualTo(before + 2 * GAP_MILLIS * MS);
      assertThat(time.nanoTime()).isEqualTo(slot.turnNanos());
    }
    assertThat(limiter.lateTurnsSkipped()).isEqualTo(1);
    assertThat(shared.intervalsMillis())
        .as("no reservation: the lease had the next")
        .hasSize(reservations);
  }

  @Test
  void aPauseCutsTheLeaseShort() throws Exception {
    DestinationLimiter limiter = limiter(8);
    busyUntilTheLeaseHolds(limiter, 2);
    long inHand = leasedTurnsAhead(limiter);
    assertThat(inHand).isPositive();

    limiter.pause(Duration.ofSeconds(1));
    long pauseEnds = time.nanoTime() + Duration.ofSeconds(1).toNanos();
    try (Slot slot = limiter.acquire()) {
      assertThat(slot.turnNanos()).isGreaterThanOrEqualTo(pauseEnds);
    }
    assertThat(limiter.leasedTurnsUnused()).isEqualTo(inHand);
  }

  @Test
  void aPauseAnotherProcessHeardCutsTheLeaseShort() throws Exception {
    DestinationLimiter limiter = limiter(8);
    busyUntilTheLeaseHolds(limiter, 2);
    long inHand = leasedTurnsAhead(limiter);
    assertThat(inHand).isPositive();

    sharedStandIn.pause("leased", Duration.ofSeconds(1));
    long pauseEnds = time.nanoTime() + Duration.ofSeconds(1).toNanos();
    try (Slot slot = limiter.acquire()) {
      assertThat(slot.turnNanos()).isGreaterThanOrEqualTo(pauseEnds);
    }
    assertThat(limiter.leasedTurnsUnused()).isEqualTo(inHand);
  }

  @Test
  void aBackoffCutsTheLeaseShortAndTheNextTurnsAreSpacedByTheNewInterval() throws Exception {
    DestinationLimiter limiter = limiter(8);
    busyUntilTheLeaseHolds(limiter, 2);
    long inHand = leasedTurnsAhead(limiter);
    assertThat(inHand).isPositive();

    limiter.backoff();
    assertThat(limiter.leasedTurnsUnused()).isEqualTo(inHand);
    int reservations = shared.intervalsMillis().size();
    List<Long> after = turns(limiter, 10);
    assertThat(shared.intervalsMillis().subList(reservations, shared.intervalsMillis().size()))
        .allSatisfy(ms -> assertThat(ms % (2 * GAP_MILLIS)).isZero());
    assertExactlySpaced(after.subList(1, after.size()), 2 * GAP_MILLIS);
  }

  @Test
  void aLockoutCutsTheLeaseShort() throws Exception {
    DestinationLimiter limiter = limiter(8);
    busyUntilTheLeaseHolds(limiter, 2);
    assertThat(leasedTurnsAhead(limiter)).isPositive();
    int reservations = shared.intervalsMillis().size();

    sharedStandIn.lockOut("leased", "HTTP 403 from elsewhere");
    assertThatThrownBy(limiter::acquire).isInstanceOf(LockedOutException.class);
    assertThat(limiter.acquireAsync())
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableThat()
        .withCauseInstanceOf(LockedOutException.class);
    assertThat(shared.intervalsMillis()).hasSize(reservations);
  }

  @Test
  void aTurnWithADeadlineIsNeverLeased() throws Exception {
    DestinationLimiter limiter = limiter(8);
    for (int i = 0; i < 10; i++) {
      assertThat(limiter.tryAcquire(Duration.ofSeconds(1)))
          .isPresent()
          .get()
          .satisfies(Slot::close);
    }
    assertThat(shared.intervalsMillis()).hasSize(10).containsOnly(GAP_MILLIS);
  }

  @Test
  void theFleetCountsALeaseAmongTheTurnsAProcessHolds() {
    Destination d =
        Destination.builder("leased")
            .ratePerSecond(100)
            .maxConcurrency(4)
            .maxFetchingProcesses(3)
            .maxLeasedTurns(16)
            .build();
    assertThat(d.maxTurnsPerProcess()).isEqualTo(19);
    assertThat(d.maxQueuedTurns()).isEqualTo(57);
    assertThat(d.toBuilder().build()).isEqualTo(d);
    assertThat(Destination.builder("plain").ratePerSecond(100).maxConcurrency(4).build())
        .satisfies(p -> assertThat(p.maxTurnsPerProcess()).isEqualTo(4));
    assertThatThrownBy(() -> Destination.builder("x").maxLeasedTurns(0))
        .hasMessageContaining("maxLeasedTurns must be 1-1024, got 0");
    assertThatThrownBy(() -> Destination.builder("x").leaseHorizon(Duration.ofSeconds(2)))
        .hasMessageContaining("leaseHorizon");
  }

  /**
   * Takes turns as a busy caller until the lease holds at least {@code turns} more: a lease is
   * taken after the turns in hand run out, so some turns of the busy spell end with none.
   */
  private void busyUntilTheLeaseHolds(DestinationLimiter limiter, int turns)
      throws InterruptedException {
    List<Long> taken = new ArrayList<>();
    while (leasedTurnsAhead(limiter) < turns) {
      taken.addAll(turns(limiter, 1));
      assertThat(taken).as("turns of the busy spell").hasSizeLessThan(30);
    }
    assertExactlySpaced(taken, GAP_MILLIS);
  }

  /** The turns the limiter's lease holds now. */
  private static long leasedTurnsAhead(DestinationLimiter limiter) {
    return limiter.leasedTurnsInHand();
  }
}
