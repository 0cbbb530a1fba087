package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.FakeTime;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Pacing, backoff, decay, lockout and degrade, observed on a fake clock: nothing here sleeps. */
class DestinationLimiterTest {

  private final FakeTime time = new FakeTime();
  private final LocalCursor sharedStandIn = new LocalCursor(time);
  private final RecordingCursor shared = new RecordingCursor(sharedStandIn);

  private DestinationLimiter limiter(double rate, int concurrency, int processes, Cursor cursor) {
    return new LimiterRegistry(cursor, time)
        .limiter(destination("dest", rate, concurrency, processes));
  }

  private static Destination destination(String name, double rate, int concurrency, int processes) {
    return Destination.builder(name)
        .ratePerSecond(rate)
        .maxConcurrency(concurrency)
        .maxFetchingProcesses(processes)
        .build();
  }

  @Test
  void turnsAreSpacedByTheSharedCursor() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    for (int i = 0; i < 4; i++) {
      limiter.acquire().close();
    }
    assertThat(time.sleepsMillis()).containsExactly(0L, 100L, 100L, 100L);
    assertThat(limiter.isDegraded()).isFalse();
    assertThat(limiter.currentRate()).isCloseTo(10.0, within(1e-6));
  }

  @Test
  void aTurnWokenForTooLateIsGivenUpAndTheNextOneTaken() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    long start = time.nanoTime();
    limiter.acquire().close(); // the turn at 0; the cursor moves to +100
    time.duringNextSleep(() -> time.advance(Duration.ofMillis(60)));
    try (Slot slot = limiter.acquire()) {
      // The sleep to +100 ended at +160: 60 ms late, over half the interval. A request sent now
      // would arrive 40 ms before the next turn's; the turn is given up and the one at +200 taken.
      assertThat(time.sleepsMillis()).containsExactly(0L, 100L, 40L);
      assertThat(slot.turnNanos()).isEqualTo(start + Duration.ofMillis(200).toNanos());
    }
    assertThat(limiter.lateTurnsSkipped()).isEqualTo(1);
  }

  /**
   * A cursor whose answer comes back after the turn it grants has begun (a slow round trip, a
   * caller not scheduled at once): the turn starts where the cursor put it, in the past, so a turn
   * begun more than half an interval ago is given up like one woken for too late, and one begun
   * less is taken at its own start, not restarted at the answer close behind the next.
   */
  @Test
  void aTurnThatBeganBeforeTheAnswerCameBackStartsInThePast() throws Exception {
    Deque<Long> startsInMillis = new ArrayDeque<>(List.of(-3L, -70L, 0L));
    Cursor late =
        new RecordingCursor(sharedStandIn) {
          @Override
          public synchronized Reservation reserve(
              String name, Duration interval, Duration notBefore) {
            super.reserve(name, interval, notBefore);
            return Reservation.grantedNanos(Duration.ofMillis(startsInMillis.pop()).toNanos());
          }
        };
    DestinationLimiter limiter = limiter(10, 1, 3, late);
    long answered = time.nanoTime();
    try (Slot slot = limiter.acquire()) {
      assertThat(slot.turnNanos()).isEqualTo(answered - Duration.ofMillis(3).toNanos());
    }
    assertThat(limiter.lateTurnsSkipped()).isZero();
    try (Slot slot = limiter.acquire()) {
      // Began 70 ms before its answer, over half the 100-ms interval: given up, the next taken.
      assertThat(slot.turnNanos()).isEqualTo(time.nanoTime());
    }
    assertThat(limiter.lateTurnsSkipped()).isEqualTo(1);
    assertThat(Reservation.grantedNanos(-5).waitTime()).isEqualTo(Duration.ZERO);
  }

  @Test
  void aPauseAnnouncedWhileATurnSleepsHoldsItUntilThePauseEnds() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    long start = time.nanoTime();
    limiter.acquire().close(); // the turn at 0; the cursor moves to +100
    // Another process hears "Retry-After: 3" just as this thread's sleep towards its turn at +100
    // ends, the last instant before its request would go.
    time.duringNextSleep(() -> sharedStandIn.pause("dest", Duration.ofSeconds(3)));
    try (Slot slot = limiter.acquire()) {
      // The turn at +100 lies inside the pause: not taken; the thread sleeps to the pause's end
      // (+3100) and takes the cursor's next turn, which the pause placed there.
      assertThat(time.sleepsMillis()).containsExactly(0L, 100L, 3000L, 0L);
      assertThat(slot.turnNanos()).isEqualTo(start + Duration.ofMillis(3100).toNanos());
    }
    assertThat(limiter.turnsHeldForPause()).isEqualTo(1);
    assertThat(limiter.pauseLeft()).isZero();
  }

  @Test
  void retryAfterPausesThisProcessAtOnceAndTheFleetThroughTheCursor() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    limiter.acquire().close();
    limiter.backoff(Duration.ofSeconds(2));
    assertThat(limiter.backoffMultiplier()).isEqualTo(2);
    assertThat(limiter.pauseLeft()).isEqualTo(Duration.ofSeconds(2));
    assertThat(sharedStandIn.reserve("dest", Duration.ofMillis(100)).waitTime())
        .as("another process's next turn")
        .isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void anAnswerIsClassifiedOnceForEveryClient() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    assertThat(limiter.noteAnswer(200, null, "u")).isEqualTo(Answer.CLEAN);
    assertThat(limiter.noteAnswer(302, null, "u")).isEqualTo(Answer.CLEAN);
    assertThat(limiter.noteAnswer(404, null, "u")).isEqualTo(Answer.CLEAN);
    assertThat(limiter.backoffMultiplier()).isEqualTo(1);

    assertThat(limiter.noteAnswer(503, "not a date", "u")).isEqualTo(Answer.THROTTLED);
    assertThat(limiter.backoffMultiplier()).isEqualTo(2);
    assertThat(limiter.pauseLeft()).as("a malformed Retry-After pauses nothing").isZero();

    String twoSecondsOn =
        java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME.format(
            java.time.Instant.ofEpochMilli(time.epochMillis())
                .plusSeconds(2)
                .atZone(java.time.ZoneOffset.UTC));
    assertThat(limiter.noteAnswer(429, twoSecondsOn, "u")).isEqualTo(Answer.THROTTLED);
    assertThat(limiter.backoffMultiplier()).isEqualTo(4);
    assertThat(limiter.pauseLeft())
        .as("an HTTP-date, read on the limiter's clock")
        .isEqualTo(Duration.ofSeconds(2));

    assertThat(limiter.noteAnswer(403, null, "https://x/y")).isEqualTo(Answer.LOCKED_OUT);
    assertThat(limiter.lockoutReason()).isEqualTo("HTTP 403 from https://x/y");
    assertThat(sharedStandIn.reserve("dest", Duration.ofMillis(100)).isLockedOut())
        .as("the lockout reached the cursor")
        .isTrue();
  }

  @Test
  void retryAfterIsCappedByTheDestination() throws Exception {
    Destination d =
        Destination.builder("dest")
            .ratePerSecond(10)
            .maxConcurrency(1)
            .maxRetryAfter(Duration.ofSeconds(30))
            .build();
    DestinationLimiter limiter = new LimiterRegistry(shared, time).limiter(d);
    limiter.backoff(Duration.ofDays(7));
    assertThat(limiter.pauseLeft()).isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void aLockoutRecordedByAnotherProcessStopsATurnAlreadyGranted() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    limiter.acquire().close();
    time.duringNextSleep(() -> sharedStandIn.lockOut("dest", "HTTP 403 from elsewhere"));
    assertThatThrownBy(limiter::acquire)
        .isInstanceOf(LockedOutException.class)
        .hasMessageContaining("HTTP 403 from elsewhere");
    assertThat(limiter.availablePermits()).as("the permit went back").isEqualTo(1);
  }

  @Test
  void aNewLimiterRefusesADestinationTheCursorHasLockedOut() {
    sharedStandIn.lockOut("dest", "HTTP 403 yesterday");
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    assertThatThrownBy(limiter::acquire)
        .isInstanceOf(LockedOutException.class)
        .hasMessageContaining("HTTP 403 yesterday");
  }

  @Test
  void aLockoutHeardHereIsRecordedForTheFleet() {
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    limiter.lockOut("HTTP 403 from https://example.org/x");
    assertThat(sharedStandIn.reserve("dest", Duration.ofMillis(100)).isLockedOut()).isTrue();
  }

  @Test
  void underFleetBackoffARateAnswerInOneProcessWidensTheOthersTurns() throws Exception {
    Destination d =
        Destination.builder("dest")
            .ratePerSecond(10)
            .maxConcurrency(1)
            .maxFetchingProcesses(2)
            .backoffScope(BackoffScope.FLEET)
            .build();
    DestinationLimiter heard = new LimiterRegistry(sharedStandIn, time).limiter(d);
    DestinationLimiter other = new LimiterRegistry(sharedStandIn, time).limiter(d);
    other.acquire().close(); // turn at 0, the next at +100
    heard.backoff();
    assertThat(heard.backoffMultiplier()).isEqualTo(2);
    other.acquire().close(); // at +100, spaced 200: the next at +300
    other.acquire().close();
    assertThat(other.backoffMultiplier()).as("learnt from the cursor").isEqualTo(2);
    assertThat(time.sleepsMillis()).containsExactly(0L, 100L, 200L);
  }

  @Test
  void underFleetBackoffCleanAnswersAnywhereHalveIt() throws Exception {
    Destination d =
        Destination.builder("dest")
            .ratePerSecond(1000)
            .maxConcurrency(1)
            .maxFetchingProcesses(2)
            .backoffScope(BackoffScope.FLEET)
            .build();
    DestinationLimiter a = new LimiterRegistry(sharedStandIn, time).limiter(d);
    DestinationLimiter b = new LimiterRegistry(sharedStandIn, time).limiter(d);
    a.backoff();
    a.backoff();
    for (int i = 0; i < 50; i++) {
      a.noteCleanResponse();
      b.noteCleanResponse();
    }
    a.acquire().close(); // reports a's 50
    assertThat(a.backoffMultiplier()).isEqualTo(4);
    b.acquire().close(); // reports b's 50: 100 in the fleet, and this turn is spaced by 2
    assertThat(b.backoffMultiplier()).isEqualTo(2);
    assertThat(a.backoffMultiplier()).as("a learns at its next reservation").isEqualTo(4);
    a.acquire().close();
    assertThat(a.backoffMultiplier()).isEqualTo(2);
  }

  @Test
  void fleetBackoffOnACursorThatCannotKeepItIsRefusedAtConfiguration() {
    Destination d =
        Destination.builder("dest").ratePerSecond(10).backoffScope(BackoffScope.FLEET).build();
    Cursor keepsNone = new UnavailableCursor();
    assertThatThrownBy(() -> new LimiterRegistry(keepsNone, time).limiter(d))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoffScope FLEET")
        .hasMessageContaining("dest");
  }

  @Test
  void aTurnWokenForLessThanHalfAnIntervalLateIsUsed() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, shared);
    long start = time.nanoTime();
    limiter.acquire().close();
    time.duringNextSleep(() -> time.advance(Duration.ofMillis(50)));
    try (Slot slot = limiter.acquire()) {
      assertThat(time.sleepsMillis()).containsExactly(0L, 100L);
      assertThat(slot.turnNanos()).isEqualTo(start + Duration.ofMillis(100).toNanos());
    }
    assertThat(limiter.lateTurnsSkipped()).isZero();
  }

  @Test
  void aLateLocalTurnIsGivenUpToo() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, new UnavailableCursor());
    long start = time.nanoTime();
    limiter.acquire().close(); // at 300, local turns 300 ms apart
    time.duringNextSleep(() -> time.advance(Duration.ofMillis(200)));
    try (Slot slot = limiter.acquire()) {
      assertThat(time.sleepsMillis()).containsExactly(300L, 300L, 100L);
      assertThat(slot.turnNanos()).isEqualTo(start + Duration.ofMillis(900).toNanos());
    }
  }

  /**
   * Processes pacing locally are in phase, each starting where the fleet's queue on the lost cursor
   * ends: a turn handed over late followed by one on time would put two of this process's requests
   * within one local interval, beside every other process's two.
   */
  @Test
  void theNextLocalTurnIsALocalIntervalAfterTheLastHandOver() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, new UnavailableCursor());
    long start = time.nanoTime();
    limiter.acquire().close(); // at 300, local turns 300 ms apart
    time.duringNextSleep(() -> time.advance(Duration.ofMillis(40)));
    try (Slot slot = limiter.acquire()) {
      // The turn at 600 handed over at 640, within the late-turn limit of 50 ms.
      assertThat(slot.turnNanos()).isEqualTo(start + Duration.ofMillis(600).toNanos());
    }
    try (Slot slot = limiter.acquire()) {
      assertThat(slot.turnNanos()).isEqualTo(start + Duration.ofMillis(940).toNanos());
    }
    assertThat(time.sleepsMillis()).containsExactly(300L, 300L, 300L);
  }

  @Test
  void unavailableCursorDegradesToTheDividedRateWithoutThrowing() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, new UnavailableCursor());
    for (int i = 0; i < 4; i++) {
      limiter.acquire().close();
    }
    // The first local turn waits for the turns the fleet may still hold on the lost cursor, which
    // this process never saw: the loss plus one interval, plus the other two processes' turns.
    assertThat(time.sleepsMillis()).containsExactly(300L, 300L, 300L, 300L);
    assertThat(limiter.isDegraded()).isTrue();
  }

  @Test
  void aDestinationFirstAskedDuringAnOutageCountsTheFleetsQueueFromTheOutagesStart()
      throws Exception {
    LimiterRegistry registry = new LimiterRegistry(new UnavailableCursor(), time);
    DestinationLimiter first = registry.limiter(destination("first"));
    DestinationLimiter metLater = registry.limiter(destination("met-later"));
    long lost = time.nanoTime();
    assertThat(first.tryAcquire(Duration.ZERO)).as("found the cursor unavailable at 0").isEmpty();
    time.advance(Duration.ofMillis(150));
    try (Slot slot = metLater.acquire()) {
      // Never saw its cursor: the loss plus one interval, plus the other two processes' turns.
      assertThat(slot.turnNanos()).isEqualTo(lost + Duration.ofMillis(300).toNanos());
    }
    time.advance(Duration.ofSeconds(5));
    DestinationLimiter metMuchLater = registry.limiter(destination("met-much-later"));
    try (Slot slot = metMuchLater.acquire()) {
      assertThat(slot.turnNanos())
          .as("the fleet's queue ended long ago: not held back by the outage's length")
          .isEqualTo(time.nanoTime());
    }
  }

  @Test
  void aRequestAskingForTwoIntervalsWaitsForTheFleetsQueueOfOneIntervalTurns() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, new UnavailableCursor());
    long start = time.nanoTime();
    try (Slot slot = limiter.acquire(2)) {
      // The loss plus one interval, plus the other two processes' turns, 100 ms each.
      assertThat(slot.turnNanos()).isEqualTo(start + Duration.ofMillis(300).toNanos());
    }
    try (Slot slot = limiter.acquire()) {
      assertThat(slot.turnNanos())
          .as("two intervals at the divided rate after the first")
          .isEqualTo(start + Duration.ofMillis(900).toNanos());
    }
  }

  @Test
  void anAnswerFromTheCursorEndsTheOutageForEveryDestination() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    LimiterRegistry registry = new LimiterRegistry(flaky, time);
    registry.limiter(destination("first")).acquire().close(); // unavailable at 0
    time.advance(Duration.ofSeconds(5));
    flaky.delegate = sharedStandIn;
    registry.limiter(destination("first")).acquire().close(); // answered at 5 s
    flaky.delegate = null;
    long lostAgain = time.nanoTime();
    try (Slot slot = registry.limiter(destination("second")).acquire()) {
      assertThat(slot.turnNanos()).isEqualTo(lostAgain + Duration.ofMillis(300).toNanos());
    }
  }

  private static Destination destination(String name) {
    return destination(name, 10, 1, 3);
  }

  @Test
  void aCursorThatThrowsIsTreatedAsUnavailable() throws Exception {
    Cursor broken =
        new UnavailableCursor() {
          @Override
          public Reservation reserve(String name, Duration interval, Duration notBefore) {
            throw new IllegalStateException("bug in a cursor");
          }
        };
    DestinationLimiter limiter = limiter(10, 1, 2, broken);
    limiter.acquire().close();
    limiter.acquire().close();
    assertThat(time.sleepsMillis()).containsExactly(200L, 200L);
  }

  @Test
  void recoversFromDegradedWhenTheCursorAnswersAgain() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    DestinationLimiter limiter = limiter(10, 1, 3, flaky);
    limiter.acquire().close();
    assertThat(limiter.isDegraded()).isTrue();
    flaky.delegate = sharedStandIn;
    limiter.acquire().close();
    assertThat(limiter.isDegraded()).isFalse();
  }

  @Test
  void theFirstLocalTurnWaitsForTheTurnsTheFleetMayStillHold() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    flaky.delegate = sharedStandIn;
    DestinationLimiter limiter = limiter(10, 2, 3, flaky);
    limiter.acquire().close(); // shared: wait 0, cursor at +100
    limiter.acquire().close(); // shared: wait 100, cursor at +200; the clock is now at +100
    flaky.delegate = null;
    limiter.acquire().close();
    limiter.acquire().close();
    // Other processes may hold (3 - 1) x 2 turns after +200: the first local turn is at +600,
    // 500 ms after now; the next one 3 x 100 ms later.
    assertThat(time.sleepsMillis()).containsExactly(0L, 100L, 500L, 300L);
  }

  @Test
  void theFirstLocalTurnAfterAQuietSpellWaitsForTheTurnsTheFleetMayHaveQueuedBeforeTheLoss()
      throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    flaky.delegate = sharedStandIn;
    DestinationLimiter limiter = limiter(10, 2, 3, flaky);
    limiter.acquire().close(); // shared: wait 0, cursor at +100
    // This process takes no turn for 10 s while the rest of the fleet goes on, then the cursor is
    // lost: what this process last saw of it is long past.
    time.advance(Duration.ofSeconds(10));
    flaky.delegate = null;
    limiter.acquire().close();
    limiter.acquire().close();
    // Other processes may hold (3 - 1) x 2 turns queued after a turn that began by the loss (+10
    // s):
    // the first local turn is at +10.5 s, 500 ms after now; the next one 3 x 100 ms later.
    assertThat(time.sleepsMillis()).containsExactly(0L, 500L, 300L);
  }

  @Test
  void aFleetLargerThanConfiguredIsDividedByTheProcessesTheCursorSaw() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    flaky.delegate = sharedStandIn;
    flaky.processes = 4;
    DestinationLimiter limiter = limiter(10, 1, 2, flaky);
    limiter.acquire().close(); // shared: wait 0, cursor at +100, 4 processes seen
    flaky.delegate = null;
    for (int i = 0; i < 3; i++) {
      limiter.acquire().close();
    }
    // The 3 others may hold a turn each after +100, so the first local turn is at +400; then one
    // every 4 x 100 ms. With the configured 2 alone it would be +200, then every 200 ms.
    assertThat(time.sleepsMillis()).containsExactly(0L, 400L, 400L, 400L);
  }

  @Test
  void aCountBelowTheConfiguredProcessesNeverLowersTheDivisor() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    flaky.delegate = sharedStandIn;
    flaky.processes = 1;
    DestinationLimiter limiter = limiter(10, 1, 3, flaky);
    limiter.acquire().close();
    flaky.delegate = null;
    limiter.acquire().close();
    limiter.acquire().close();
    assertThat(time.sleepsMillis()).containsExactly(0L, 300L, 300L);
  }

  @Test
  void aHugeCountIsCappedSoThatNoProcessStalls() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    flaky.delegate = sharedStandIn;
    flaky.processes = 1_000_000;
    DestinationLimiter limiter = limiter(10, 1, 2, flaky);
    limiter.acquire().close();
    flaky.delegate = null;
    limiter.acquire().close();
    limiter.acquire().close();
    long cappedMillis = 100L * Destination.MOST_PROCESSES_COUNTED;
    assertThat(time.sleepsMillis()).containsExactly(0L, cappedMillis, cappedMillis);
  }

  @Test
  void aConfiguredValueAboveTheCapCountsInFull() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    flaky.delegate = sharedStandIn;
    flaky.processes = 1_000_000;
    DestinationLimiter limiter = limiter(10, 1, 100, flaky);
    limiter.acquire().close();
    flaky.delegate = null;
    limiter.acquire().close();
    limiter.acquire().close();
    assertThat(time.sleepsMillis()).containsExactly(0L, 10_000L, 10_000L);
  }

  @Test
  void theCountOfTheLastSharedTurnHoldsThroughTheOutage() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    flaky.delegate = sharedStandIn;
    flaky.processes = 5;
    DestinationLimiter limiter = limiter(10, 1, 2, flaky);
    limiter.acquire().close(); // 5 seen
    time.advance(Duration.ofSeconds(10));
    flaky.processes = 3;
    limiter.acquire().close(); // shared again, at +10 s: the fleet shrank to 3
    flaky.delegate = null;
    flaky.processes = 0;
    limiter.acquire().close();
    time.advance(Duration.ofMinutes(10));
    limiter.acquire().close();
    limiter.acquire().close();
    // After the turn at +10 s: 2 others' turns, then every 300 ms, 10 minutes into the outage too.
    assertThat(time.sleepsMillis()).containsExactly(0L, 0L, 300L, 0L, 300L);

    flaky.delegate = sharedStandIn;
    limiter.acquire().close(); // shared, and the cursor no longer counts anyone
    flaky.delegate = null;
    limiter.acquire().close();
    limiter.acquire().close();
    List<Long> sleeps = time.sleepsMillis();
    assertThat(sleeps.subList(sleeps.size() - 1, sleeps.size()))
        .as("back to the configured 2")
        .containsExactly(200L);
  }

  @Test
  void aLocalTurnEndingAfterTheCursorIsBackAlsoTakesASharedTurn() throws Exception {
    for (int i = 0; i < 4; i++) {
      sharedStandIn.reserve("dest", Duration.ofMillis(100)); // the fleet's next turn 400 ms ahead
    }
    UnavailableCursor flaky = new UnavailableCursor();
    DestinationLimiter limiter = limiter(10, 1, 3, flaky);
    time.duringNextSleep(() -> flaky.delegate = sharedStandIn);
    limiter.acquire().close();
    assertThat(time.sleepsMillis())
        .as("local wait, then the shared one")
        .containsExactly(300L, 100L);
    assertThat(limiter.isDegraded()).isFalse();
  }

  /**
   * Until the retry boundary after a return, another process may still pace locally: a turn granted
   * meanwhile waits for its local turn, then takes the shared turn at that instant, so this process
   * goes no faster than locally. Once it knows of the hand-over, a turn paces locally first and
   * takes one shared turn, not two. A local wait never outlasts the hand-over, and after it the
   * shared spacing alone applies.
   */
  @Test
  void aTurnGrantedDuringAHandOverWaitsForTheLaterOfTheSharedAndTheLocalTurn() throws Exception {
    UnavailableCursor flaky = new UnavailableCursor();
    DestinationLimiter limiter = limiter(10, 1, 3, flaky);
    limiter.acquire().close(); // local turn at 300, the next local one at 600
    long handOverEndsMillis = time.epochMillis() + 700;
    AtomicInteger sharedReservations = new AtomicInteger();
    flaky.delegate =
        new UnavailableCursor() {
          @Override
          public Reservation reserve(String name, Duration interval, Duration notBefore) {
            sharedReservations.incrementAndGet();
            Reservation turn = sharedStandIn.reserve(name, interval, notBefore);
            long left = handOverEndsMillis - time.epochMillis();
            return left > 0 ? turn.duringHandOver(Duration.ofMillis(left)) : turn;
          }
        };
    limiter.acquire().close(); // news of the hand-over at 300: local wait to 600, shared again
    assertThat(sharedReservations).as("the first hand-over turn reserves twice").hasValue(2);
    limiter.acquire().close(); // known hand-over: local wait to 900, one shared turn
    assertThat(sharedReservations).as("a known hand-over reserves once").hasValue(3);
    limiter.acquire().close(); // the local turn would be at 1200; the hand-over ends at 1000
    limiter.acquire().close(); // the shared spacing alone: 1100
    assertThat(time.sleepsMillis())
        .as("local; hand-over x3 at the local spacing, cut at its end;" + " then shared")
        .containsExactly(300L, 300L, 0L, 300L, 0L, 100L, 0L, 100L);
  }

  @Test
  void aLostSharedCursorDoesNotHandOutTurnsThisProcessKnowsAreTaken() throws Exception {
    DestinationLimiter limiter = limiter(10, 3, 1, shared);
    Slot first = limiter.acquire(); // wait 0: the cursor is now at +100
    time.duringNextSleep(() -> sharedStandIn.clear("dest")); // the row is lost during the wait
    Slot second = limiter.acquire(); // granted +100, the cursor at +200, then lost
    Slot third = limiter.acquire();
    // Without the process's own knowledge the lost cursor would grant "now" (+100), a turn
    // already taken; the third turn starts at +200.
    assertThat(time.sleepsMillis()).containsExactly(0L, 100L, 100L);
    first.close();
    second.close();
    third.close();
  }

  @Test
  void aSharedTurnBeginsItsWaitAfterTheCursorAnswers() throws Exception {
    // The reservation's round trip takes 7 ms on the local clock. A cursor's wait counts from its
    // answer (a remote cursor has already accounted for the trip), so the turn begins at the
    // answer plus the wait, and the sleep ends exactly at the turn.
    Cursor slow =
        new UnavailableCursor() {
          @Override
          public Reservation reserve(String name, Duration interval, Duration notBefore) {
            time.advance(Duration.ofMillis(7));
            return sharedStandIn.reserve(name, interval, notBefore);
          }
        };
    DestinationLimiter limiter = limiter(10, 1, 1, slow);
    long start = time.nanoTime();
    try (Slot first = limiter.acquire()) {
      assertThat(first.turnNanos()).isEqualTo(start + Duration.ofMillis(7).toNanos());
    }
    try (Slot second = limiter.acquire()) {
      // Answered at +14 ms with a wait of 93 ms (the stand-in's cursor stood at +107).
      assertThat(time.sleepsMillis()).containsExactly(0L, 93L);
      assertThat(second.turnNanos()).isEqualTo(start + Duration.ofMillis(107).toNanos());
      assertThat(time.nanoTime()).isEqualTo(second.turnNanos());
    }
  }

  @Test
  void aLocalTurnBeginsAtTheLocalCursorsInstant() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 3, new UnavailableCursor());
    long start = time.nanoTime();
    try (Slot first = limiter.acquire()) {
      assertThat(first.turnNanos()).isEqualTo(start + Duration.ofMillis(300).toNanos());
    }
    time.advance(Duration.ofMillis(50));
    try (Slot second = limiter.acquire()) {
      assertThat(second.turnNanos()).isEqualTo(start + Duration.ofMillis(600).toNanos());
      assertThat(time.nanoTime()).isEqualTo(second.turnNanos());
    }
  }

  @Test
  void aLocalTurnThatAlsoTakesASharedTurnBeginsAtTheSharedOne() throws Exception {
    for (int i = 0; i < 4; i++) {
      sharedStandIn.reserve("dest", Duration.ofMillis(100)); // the fleet's next turn 400 ms ahead
    }
    UnavailableCursor flaky = new UnavailableCursor();
    DestinationLimiter limiter = limiter(10, 1, 3, flaky);
    time.duringNextSleep(() -> flaky.delegate = sharedStandIn);
    long start = time.nanoTime();
    try (Slot slot = limiter.acquire()) {
      assertThat(slot.turnNanos()).isEqualTo(start + Duration.ofMillis(400).toNanos());
    }
  }

  @Test
  void backoffWidensTheIntervalSentToTheSharedCursorAndDecays() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 1, shared);
    limiter.acquire().close();
    limiter.backoff();
    limiter.acquire().close();
    for (int i = 0; i < 10; i++) {
      limiter.backoff();
    }
    limiter.acquire().close();
    assertThat(shared.intervalsMillis()).containsExactly(100L, 200L, 1600L);
    assertThat(limiter.backoffMultiplier()).isEqualTo(16);

    for (int i = 0; i < 100; i++) {
      limiter.noteCleanResponse();
    }
    limiter.acquire().close();
    assertThat(shared.intervalsMillis()).endsWith(800L);
    assertThat(limiter.currentInterval()).isEqualTo(Duration.ofMillis(800));
  }

  @Test
  void backoffAlsoWidensDegradedPacing() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 2, new UnavailableCursor());
    limiter.acquire().close();
    limiter.backoff();
    limiter.acquire().close();
    limiter.acquire().close();
    // The first turn waited 200 ms for the fleet's turns on the lost cursor and left the local
    // cursor 200 ms ahead; the next is spaced 2 x 2 x 100 ms.
    assertThat(time.sleepsMillis()).containsExactly(200L, 200L, 400L);
  }

  @Test
  void lockoutStopsEveryLaterAcquire() throws Exception {
    DestinationLimiter limiter = limiter(10, 2, 1, shared);
    limiter.acquire().close();
    limiter.lockOut("HTTP 403");
    assertThat(limiter.isLockedOut()).isTrue();
    assertThatThrownBy(limiter::acquire)
        .isInstanceOf(LockedOutException.class)
        .hasMessageContaining("HTTP 403");
    assertThatThrownBy(() -> limiter.tryAcquire(Duration.ofSeconds(1)))
        .isInstanceOf(LockedOutException.class);
    assertThat(limiter.availablePermits()).isEqualTo(2);
  }

  @Test
  void lockoutDuringTheWaitThrowsAndReleasesThePermit() {
    DestinationLimiter limiter = limiter(10, 1, 1, shared);
    time.duringNextSleep(() -> limiter.lockOut("HTTP 403"));
    assertThatThrownBy(limiter::acquire).isInstanceOf(LockedOutException.class);
    assertThat(limiter.availablePermits()).isEqualTo(1);
  }

  @Test
  void interruptDuringTheWaitReleasesThePermit() {
    DestinationLimiter limiter = limiter(10, 1, 1, shared);
    time.duringNextSleep(() -> Thread.currentThread().interrupt());
    assertThatThrownBy(limiter::acquire).isInstanceOf(InterruptedException.class);
    Thread.interrupted();
    assertThat(limiter.availablePermits()).isEqualTo(1);
  }

  @Test
  void anyExceptionBetweenPermitAndSlotReleasesThePermit() {
    DestinationLimiter limiter = limiter(10, 1, 1, shared);
    time.failNextSleep(new IllegalStateException("sleeper broke"));
    assertThatThrownBy(limiter::acquire).hasMessage("sleeper broke");
    assertThat(limiter.availablePermits()).isEqualTo(1);
  }

  @Test
  void slotHoldsThePermitUntilClosedOnce() throws Exception {
    DestinationLimiter limiter = limiter(10, 2, 1, shared);
    Slot slot = limiter.acquire();
    assertThat(limiter.availablePermits()).isEqualTo(1);
    slot.close();
    slot.close();
    assertThat(limiter.availablePermits()).isEqualTo(2);
  }

  @Test
  void tryAcquireRefusesWithoutConsumingATurnOrAPermit() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 1, shared);
    limiter.acquire().close(); // cursor now 100 ms ahead of the clock
    Optional<Slot> refused = limiter.tryAcquire(Duration.ofMillis(50));
    assertThat(refused).isEmpty();
    assertThat(limiter.availablePermits()).isEqualTo(1);

    Optional<Slot> granted = limiter.tryAcquire(Duration.ofMillis(100));
    assertThat(granted).isPresent();
    assertThat(time.lastSleepMillis()).as("the refusal did not push the turn back").isEqualTo(100L);
    granted.get().close();
  }

  @Test
  void tryAcquireRefusesWhenNoPermitIsFree() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 1, shared);
    try (Slot held = limiter.acquire()) {
      assertThat(limiter.tryAcquire(Duration.ZERO)).isEmpty();
      assertThat(shared.intervalsMillis()).hasSize(1);
    }
  }

  @Test
  void tryAcquireFallsBackWhenUnavailable() throws Exception {
    DestinationLimiter limiter = limiter(10, 1, 4, new UnavailableCursor());
    limiter.tryAcquire(Duration.ofSeconds(1)).orElseThrow().close();
    assertThat(limiter.tryAcquire(Duration.ofMillis(399))).isEmpty();
    limiter.tryAcquire(Duration.ofMillis(400)).orElseThrow().close();
    assertThat(time.sleepsMillis()).containsExactly(400L, 400L);
  }

  @Test
  void registryHandsOutOneLimiterPerNameAndRefusesAConflictingConfiguration() {
    LimiterRegistry registry = new LimiterRegistry(shared, time);
    Destination d = Destination.builder("dest").ratePerSecond(7).build();
    assertThat(registry.limiter(d)).isSameAs(registry.limiter(d.toBuilder().build()));
    assertThatThrownBy(() -> registry.limiter(d.toBuilder().ratePerSecond(8).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("dest")
        .hasMessageContaining("different configuration");
  }

  @Test
  void aPauseTheCursorHandsOnIsCappedAtMaxRetryAfterWhateverItsLength() {
    Cursor.Listener[] heard = new Cursor.Listener[1];
    RecordingCursor listening =
        new RecordingCursor(sharedStandIn) {
          @Override
          public void listen(String name, Listener listener) {
            heard[0] = listener;
          }
        };
    DestinationLimiter limiter =
        new LimiterRegistry(listening, time)
            .limiter(
                Destination.builder("told")
                    .ratePerSecond(10)
                    .maxRetryAfter(Duration.ofSeconds(30))
                    .build());
    heard[0].paused(Duration.ofSeconds(Long.MAX_VALUE));
    assertThat(limiter.pauseLeft()).isEqualTo(Duration.ofSeconds(30));
    heard[0].paused(Duration.ofSeconds(-5));
    heard[0].paused(Duration.ZERO);
    assertThat(limiter.pauseLeft()).isEqualTo(Duration.ofSeconds(30));
    time.advance(Duration.ofSeconds(31));
    assertThat(limiter.pauseLeft()).isZero();
  }

  @Test
  void aLockoutsReasonLeavesTheUrlsSecretsOutAndIsBoundedInBytes() {
    DestinationLimiter limiter =
        new LimiterRegistry(shared, time)
            .limiter(Destination.builder("secretive").ratePerSecond(10).build());
    limiter.noteAnswer(
        403, null, URI.create("https://user:hunter2@example.org:8443/a/b?token=s3cret#f"));
    assertThat(limiter.lockoutReason()).isEqualTo("HTTP 403 from https://example.org:8443/a/b?…");

    DestinationLimiter wordy =
        new LimiterRegistry(shared, time)
            .limiter(Destination.builder("wordy").ratePerSecond(10).build());
    wordy.lockOut("é".repeat(3000));
    byte[] utf8 = wordy.lockoutReason().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertThat(utf8.length).isLessThanOrEqualTo(LockoutReasons.MAX_BYTES);
    assertThat(wordy.lockoutReason()).startsWith("éé").endsWith("é…");
  }

  /** A store that cannot be reached, until a delegate is set. */
  private static class UnavailableCursor implements Cursor {
    volatile Cursor delegate;

    /** What {@link #fetchingProcesses} answers; 0 for nothing. */
    volatile int processes;

    @Override
    public java.util.OptionalInt fetchingProcesses(String name) {
      return processes == 0 ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(processes);
    }

    @Override
    public Reservation reserve(String name, Duration interval, Duration notBefore) {
      return delegate == null
          ? Reservation.unavailable()
          : delegate.reserve(name, interval, notBefore);
    }

    @Override
    public Reservation tryReserve(
        String name, Duration interval, Duration notBefore, Duration maxWait) {
      return delegate == null
          ? Reservation.unavailable()
          : delegate.tryReserve(name, interval, notBefore, maxWait);
    }

    @Override
    public void clear(String name) {}
  }
}
