package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link DestinationLimiter#acquireAsync()} on a fake clock and a {@link FakeScheduler}: every
 * scenario of the turn-taking gives the same turns and the same waits as {@link
 * DestinationLimiter#acquire()} does, without a thread sleeping; cancelling gives back what was
 * held; a lockout fails the future. Nothing here sleeps.
 */
class AsyncAcquireTest {

  private final Rig rig = new Rig(true);

  /** The turn-taking scenarios of {@link DestinationLimiterTest}, runnable either way. */
  interface Scenario {
    void run(Rig rig) throws Exception;
  }

  static Stream<Named<Scenario>> scenarios() {
    return Stream.of(
        Named.of(
            "turns spaced by the shared cursor",
            rig -> {
              DestinationLimiter limiter = rig.limiter(10, 1, 3, rig.standIn);
              for (int i = 0; i < 4; i++) {
                rig.take(limiter);
              }
            }),
        Named.of(
            "a turn woken for too late is given up",
            rig -> {
              DestinationLimiter limiter = rig.limiter(10, 1, 3, rig.standIn);
              rig.take(limiter);
              rig.duringNextWait(() -> rig.time.advance(Duration.ofMillis(60)));
              rig.take(limiter);
              assertThat(limiter.lateTurnsSkipped()).isEqualTo(1);
            }),
        Named.of(
            "a pause announced during the wait holds the turn",
            rig -> {
              DestinationLimiter limiter = rig.limiter(10, 1, 3, rig.standIn);
              rig.take(limiter);
              rig.duringNextWait(() -> rig.standIn.pause("dest", Duration.ofSeconds(3)));
              rig.take(limiter);
              assertThat(limiter.turnsHeldForPause()).isEqualTo(1);
            }),
        Named.of(
            "degraded pacing with backoff",
            rig -> {
              DestinationLimiter limiter = rig.limiter(10, 1, 2, new Flaky());
              rig.take(limiter);
              limiter.backoff();
              rig.take(limiter);
              rig.take(limiter);
              assertThat(limiter.isDegraded()).isTrue();
            }),
        Named.of(
            "the first local turn waits for the fleet's turns",
            rig -> {
              Flaky flaky = new Flaky();
              flaky.delegate = rig.standIn;
              DestinationLimiter limiter = rig.limiter(10, 2, 3, flaky);
              rig.take(limiter);
              rig.take(limiter);
              flaky.delegate = null;
              rig.take(limiter);
              rig.take(limiter);
            }),
        Named.of(
            "a local turn ending after the cursor is back takes a shared one",
            rig -> {
              rig.standIn.reserve("dest", Duration.ofMillis(100));
              rig.standIn.reserve("dest", Duration.ofMillis(100));
              Flaky flaky =
                  new Flaky() {
                    @Override
                    public Reservation reserve(String name, Duration interval, Duration notBefore) {
                      Reservation answer = super.reserve(name, interval, notBefore);
                      delegate = rig.standIn; // back after its first answer
                      return answer;
                    }
                  };
              DestinationLimiter limiter = rig.limiter(10, 1, 3, flaky);
              rig.take(limiter);
              assertThat(limiter.isDegraded()).isFalse();
            }),
        Named.of(
            "a hand-over: the later of the shared and the local turn",
            rig -> {
              Flaky flaky = new Flaky();
              DestinationLimiter limiter = rig.limiter(10, 1, 3, flaky);
              rig.take(limiter);
              long handOverEndsMillis = rig.time.epochMillis() + 700;
              flaky.delegate =
                  new Flaky() {
                    @Override
                    public Reservation reserve(String name, Duration interval, Duration notBefore) {
                      Reservation turn = rig.standIn.reserve(name, interval, notBefore);
                      long left = handOverEndsMillis - rig.time.epochMillis();
                      return left > 0 ? turn.duringHandOver(Duration.ofMillis(left)) : turn;
                    }
                  };
              for (int i = 0; i < 4; i++) {
                rig.take(limiter);
              }
            }));
  }

  @ParameterizedTest
  @MethodSource("scenarios")
  void theAsynchronousPathTakesTheTurnsTheBlockingPathTakes(Scenario scenario) throws Exception {
    Rig blocking = new Rig(false);
    scenario.run(blocking);
    Rig async = new Rig(true);
    scenario.run(async);
    assertThat(async.turnsMillis).as("turn instants").isEqualTo(blocking.turnsMillis);
    assertThat(async.scheduler.waitsMillis())
        .as("the waits, scheduled")
        .isEqualTo(blocking.nonZeroSleepsMillis());
    assertThat(async.time.sleepsMillis()).as("no thread slept").isEmpty();
  }

  @Test
  void aCallerQueuedForAPermitThatCancelsLeavesTheQueue() throws Exception {
    DestinationLimiter limiter = rig.limiter(10, 1, 1, rig.standIn);
    Slot held = rig.takeAsync(limiter);
    CompletableFuture<Slot> queued = limiter.acquireAsync();
    assertThat(queued).isNotDone();
    assertThat(queued.cancel(false)).isTrue();
    held.close();
    assertThat(limiter.availablePermits()).isEqualTo(1);
    assertThat(rig.scheduler.runUntilIdle()).as("nothing left to run").isZero();
  }

  @Test
  void aFutureTheCallerCompletesItselfGivesBackWhatItHeld() throws Exception {
    DestinationLimiter limiter = rig.limiter(10, 1, 1, rig.standIn);
    rig.takeAsync(limiter).close();
    CompletableFuture<Slot> waiting = limiter.acquireAsync();
    rig.scheduler.runDue();
    waiting.completeExceptionally(new IllegalStateException("the caller gave up its own way"));
    assertThat(limiter.availablePermits()).isEqualTo(1);
    assertThat(rig.scheduler.pending()).as("the wait was dropped").isZero();
  }

  @Test
  void cancellingDuringTheWaitGivesThePermitBackButNotTheTurn() throws Exception {
    DestinationLimiter limiter = rig.limiter(10, 1, 1, rig.standIn);
    rig.takeAsync(limiter).close(); // the turn at 0; the cursor moves to +100
    CompletableFuture<Slot> waiting = limiter.acquireAsync();
    rig.scheduler.runDue(); // the reservation: the turn at +100, a wait of 100 ms scheduled
    assertThat(rig.scheduler.pending()).isEqualTo(1);
    assertThat(waiting.cancel(false)).isTrue();
    assertThat(limiter.availablePermits()).as("the permit went back").isEqualTo(1);
    assertThat(rig.scheduler.pending()).as("the wait was dropped").isZero();
    try (Slot next = rig.takeAsync(limiter)) {
      assertThat(next.turnNanos() - rig.start)
          .as("the turn at +100 is spent")
          .isEqualTo(Duration.ofMillis(200).toNanos());
    }
  }

  @Test
  void aFleetSlotIsPolledForWithoutAThreadAndGivenBackOnCancel() throws Exception {
    InMemoryFleetSlots slots = new InMemoryFleetSlots();
    Destination capped =
        Destination.builder("capped")
            .ratePerSecond(1)
            .maxConcurrency(4)
            .maxConcurrencyFleetWide(1)
            .build();
    AsyncPools pools = AsyncPools.of(rig.scheduler, rig.scheduler);
    DestinationLimiter a = new LimiterRegistry(rig.standIn, slots, rig.time, pools).limiter(capped);
    DestinationLimiter b = new LimiterRegistry(rig.standIn, slots, rig.time, pools).limiter(capped);
    Slot other = rig.takeAsync(b);
    assertThat(slots.held("capped")).isEqualTo(1);

    CompletableFuture<Slot> polling = a.acquireAsync();
    rig.scheduler.runFor(Duration.ofMillis(100));
    assertThat(rig.scheduler.waitsMillis())
        .as("polls at the blocking path's spacing")
        .containsExactly(5L, 10L, 20L, 40L, 40L);
    assertThat(rig.time.sleepsMillis()).isEmpty();
    assertThat(polling).isNotDone();

    other.close();
    rig.scheduler.runFor(Duration.ofMillis(40)); // the next poll takes the slot and reserves
    assertThat(slots.held("capped")).isEqualTo(1);
    assertThat(polling).as("the turn, 1 s after b's, is still ahead").isNotDone();
    assertThat(polling.cancel(false)).isTrue();
    assertThat(slots.held("capped")).as("the fleet slot went back").isZero();
    assertThat(a.availablePermits()).isEqualTo(4);
  }

  @Test
  void aLockedOutDestinationFailsTheFutureAndKeepsNothing() {
    DestinationLimiter limiter = rig.limiter(10, 1, 1, rig.standIn);
    limiter.lockOut("HTTP 403 from x");
    CompletableFuture<Slot> refused = limiter.acquireAsync();
    assertThat(refused).isCompletedExceptionally();
    assertThat(refused.handle((s, t) -> t))
        .isCompletedWithValueMatching(
            t -> t instanceof LockedOutException && t.getMessage().contains("HTTP 403 from x"));
    assertThat(limiter.availablePermits()).isEqualTo(1);
  }

  @Test
  void aLockoutDuringTheWaitFailsTheFutureAndGivesThePermitBack() throws Exception {
    DestinationLimiter limiter = rig.limiter(10, 1, 1, rig.standIn);
    rig.takeAsync(limiter).close();
    CompletableFuture<Slot> waiting = limiter.acquireAsync();
    rig.scheduler.duringNextWait(() -> rig.standIn.lockOut("dest", "HTTP 403 from elsewhere"));
    rig.scheduler.runUntilIdle();
    assertThat(waiting.handle((s, t) -> t instanceof CompletionException ? t.getCause() : t))
        .isCompletedWithValueMatching(
            t ->
                t instanceof LockedOutException
                    && t.getMessage().contains("HTTP 403 from elsewhere"));
    assertThat(limiter.availablePermits()).isEqualTo(1);
  }

  @Test
  void blockedAndAsynchronousCallersShareOneQueueFirstComeFirstServed() throws Exception {
    DestinationLimiter limiter = rig.limiter(1000, 1, 1, rig.standIn);
    Slot held = rig.takeAsync(limiter);
    CompletableFuture<Slot> first = limiter.acquireAsync();
    List<Long> blockedGot = new ArrayList<>();
    Thread blocked =
        new Thread(
            () -> {
              try (Slot slot = limiter.acquire()) {
                blockedGot.add(slot.turnNanos());
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    blocked.start();
    while (limiter.permitsWaiting() < 2) {
      Thread.onSpinWait();
    }
    held.close(); // the permit goes to the first in the queue: the asynchronous caller
    rig.scheduler.runUntilIdle();
    assertThat(first).isDone();
    assertThat(blocked.isAlive()).as("the blocked caller, second, still waits").isTrue();
    first.join().close();
    blocked.join(TimeUnit.SECONDS.toMillis(10));
    assertThat(blockedGot).hasSize(1);
    assertThat(limiter.availablePermits()).isEqualTo(1);
  }

  /**
   * A turn granted on an executor of the caller's is checked for lateness where that executor runs
   * it: here the executor runs its first task 60 ms after it was given (at 10/s the limit is 50
   * ms), so that turn is given up and the next one granted in time. Granted on the scheduler's
   * thread, the same turn would pass its check, and the request sent from the busy executor would
   * leave 60 ms late, unseen.
   */
  @Test
  void aTurnGrantedOnACallersExecutorIsCheckedWhereThatExecutorRunsIt() {
    DestinationLimiter limiter = rig.limiter(10, 1, 1, rig.standIn);
    Queue<Runnable> granting = new ConcurrentLinkedQueue<>();
    CompletableFuture<Slot> turn = limiter.acquireAsync(granting::add);
    boolean firstRunLate = true;
    for (int i = 0; i < 10 && !turn.isDone(); i++) {
      rig.scheduler.runUntilIdle();
      for (Runnable task = granting.poll(); task != null; task = granting.poll()) {
        if (firstRunLate) {
          rig.time.advance(Duration.ofMillis(60));
          firstRunLate = false;
        }
        task.run();
      }
    }
    assertThat(turn).isDone();
    assertThat(limiter.lateTurnsSkipped()).as("turns given up as late").isEqualTo(1);
    Slot slot = turn.join();
    assertThat(Math.round((slot.turnNanos() - rig.start) / 1e6))
        .as("the turn granted, ms")
        .isEqualTo(100);
    assertThat(rig.time.nanoTime() - slot.turnNanos())
        .as("granted this late after its start")
        .isLessThanOrEqualTo(Duration.ofMillis(50).toNanos());
    slot.close();
  }

  @Test
  void poolsThatRefuseWorkFailTheFutureAndKeepNothing() {
    DestinationLimiter limiter = rig.limiter(10, 1, 1, rig.standIn);
    rig.scheduler.shutdown();
    CompletableFuture<Slot> refused = limiter.acquireAsync();
    assertThat(refused.handle((s, t) -> t))
        .isCompletedWithValueMatching(t -> t instanceof RejectedExecutionException);
    assertThat(limiter.availablePermits()).isEqualTo(1);
  }

  /** One way of acquiring (blocking, or asynchronous on a fake scheduler) and what it recorded. */
  static final class Rig {
    final FakeTime time = new FakeTime();
    final FakeScheduler scheduler = new FakeScheduler(time);
    final LocalCursor standIn = new LocalCursor(time);
    final long start = time.nanoTime();
    final List<Long> turnsMillis = new ArrayList<>();
    private final boolean async;

    Rig(boolean async) {
      this.async = async;
    }

    DestinationLimiter limiter(double rate, int concurrency, int processes, Cursor cursor) {
      Destination d =
          Destination.builder("dest")
              .ratePerSecond(rate)
              .maxConcurrency(concurrency)
              .maxFetchingProcesses(processes)
              .build();
      return new LimiterRegistry(cursor, time, AsyncPools.of(scheduler, scheduler)).limiter(d);
    }

    /** Takes a turn this rig's way, records its instant, and closes its slot. */
    void take(DestinationLimiter limiter) throws Exception {
      try (Slot slot = async ? takeAsync(limiter) : limiter.acquire()) {
        turnsMillis.add(Math.round((slot.turnNanos() - start) / 1e6));
      }
    }

    Slot takeAsync(DestinationLimiter limiter) {
      CompletableFuture<Slot> turn = limiter.acquireAsync();
      scheduler.runUntilIdle();
      assertThat(turn).as("granted once the scheduler has run").isDone();
      return turn.join();
    }

    void duringNextWait(Runnable action) {
      if (async) {
        scheduler.duringNextWait(action);
      } else {
        time.duringNextSleep(action);
      }
    }

    List<Long> nonZeroSleepsMillis() {
      List<Long> out = new ArrayList<>(time.sleepsMillis());
      out.removeIf(s -> s == 0);
      return out;
    }
  }

  /** A cursor that cannot be reached, until a delegate is set. */
  static class Flaky implements Cursor {
    volatile Cursor delegate;

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
