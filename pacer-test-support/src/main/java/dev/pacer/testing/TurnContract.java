package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;

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
 * The turn arithmetic, {@code next = max(now, next) + interval}, as every implementation of it must
 * answer: each {@link Cursor}, through {@link CursorContract}, and anything else that reserves
 * turns by that rule on a store of its own, through an adapter that answers its turns as a cursor's
 * reservations (one key, one destination). It asks of the cursor only {@code reserve}, {@code
 * tryReserve} and {@code pause}: the turns, the refusal that consumes nothing, and the push that
 * holds the next turns back. Reservations only compute waits; the one sleep, an idle spell, is on
 * {@link #clock()} (a fake clock's sleep only moves it).
 *
 * <p>Each backend hands its cursor a {@link TurnClock} ({@link #clock()}), so every granted turn's
 * start is known on that clock exactly, however long the calls took or wherever the scheduler held
 * the threads. A sequence's turns are then asserted where they must start from its first turn, to
 * within the backend's {@link #turnTolerance()}: none for a local cursor, and for a cursor that
 * maps another clock onto this one the error of that mapping. Only the first turn of a sequence is
 * placed against the calls themselves, as an instant inside them.
 */
public abstract class TurnContract {

  /**
   * The gap between turns: long beside the calls, so that a sequence's reservations all come before
   * the turns they queue behind, and the cursor's now cannot overtake its queue.
   */
  protected static final Duration GAP = Duration.ofSeconds(1);

  /** How long a cursor is left idle, past its last turn, in {@link #anIdleCursorBanksNothing}. */
  private static final Duration IDLE = Duration.ofMillis(100);

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

  /** Starts a sequence of turns: its first turn is placed against the calls from here on. */
  protected final void startSequence() {
    firstIdeal = null;
    sequenceCalled = clock().nanoTime();
  }

  /**
   * The turn starts {@code ideal} after the sequence's origin: the instant its first call read the
   * cursor's now. The first turn asserted fixes the origin, and must lie {@code ideal} after some
   * instant of the calls since {@link #startSequence()}; every later one starts exactly where its
   * {@code ideal} puts it from the first, give or take {@link #turnTolerance()}.
   */
  protected final void assertWait(Reservation r, Duration ideal, String what) {
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

  /**
   * A cursor that now has passed starts the next turn now, not where it stood (a turn in the past,
   * which the caller takes at once), and banks nothing of the idle spell: the turn after it is a
   * gap later, where a token bucket would grant it at once too.
   */
  @Test
  void anIdleCursorBanksNothing() throws InterruptedException {
    String name = freshName();
    cursor().reserve(name, IDLE.dividedBy(10));
    clock().sleepNanos(IDLE.toNanos());
    startSequence();
    assertWait(cursor().reserve(name, GAP), Duration.ZERO, "the first after the idle spell");
    assertWait(cursor().reserve(name, GAP), GAP, "the next");
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
  void aWidenedIntervalIsHonoured() {
    String name = freshName();
    startSequence();
    assertWait(cursor().reserve(name, GAP), Duration.ZERO, "first");
    assertWait(cursor().reserve(name, GAP.multipliedBy(8)), GAP, "widened");
    assertWait(cursor().reserve(name, GAP), GAP.multipliedBy(9), "after it");
    assertWait(cursor().reserve(name, GAP), GAP.multipliedBy(10), "next");
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
