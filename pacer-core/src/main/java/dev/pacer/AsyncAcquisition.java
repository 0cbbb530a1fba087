package dev.pacer;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * One {@link DestinationLimiter#acquireAsync()}: waits for a permit in the limiter's queue, then
 * drives the limiter's {@link TurnStep}s with no thread waiting: each {@link TurnStep.Wait} is a
 * task on the {@link AsyncPools#scheduler() scheduler}, each {@link TurnStep.RoundTrip} runs on the
 * {@link AsyncPools#roundTrips() round-trip executor}, and the continuation of a wait runs on the
 * scheduler's thread until it reaches the next round trip.
 *
 * <p>What the acquisition holds (the permit, then the fleet slot) goes either into the granted
 * {@link Slot} or back, exactly once: {@code settled} is claimed by whichever comes first of the
 * grant, a failure, and the caller's cancel (or completion). A cancel claims it while a step is
 * running on another thread (a reservation in flight, say); that step's outcome is then dropped,
 * and a turn it reserved on the cursor stays reserved: the cursor has no way to take a turn back.
 */
final class AsyncAcquisition {

  /** What {@link #fleetSlot} holds before a slot is taken and after it has gone on. */
  private static final FleetCap.Held NOTHING = FleetCap.UNCAPPED_HELD;

  private final Permits permits;
  private final AsyncPools pools;

  /**
   * Where a wait's end continues (the check for a late turn, the grant): null for the scheduler.
   */
  private final Executor grantOn;

  private final CompletableFuture<Slot> result = new CompletableFuture<>();
  private final CompletableFuture<Void> permit;
  private final AtomicBoolean settled = new AtomicBoolean();
  private final AtomicReference<FleetCap.Held> fleetSlot = new AtomicReference<>(NOTHING);
  private volatile Future<?> pendingWait = CompletableFuture.completedFuture(null);

  private AsyncAcquisition(Permits permits, AsyncPools pools, Executor grantOn) {
    this.permits = permits;
    this.pools = pools;
    this.grantOn = grantOn;
    this.permit = permits.acquireAsync();
  }

  /**
   * Starts an acquisition: a permit from {@code permits}, then the steps {@code steps} gives, to
   * which it hands the consumer that records the fleet slot once taken. Each wait's end runs on
   * {@code grantOn}, or on the scheduler's thread if it is null.
   */
  static CompletableFuture<Slot> start(
      Permits permits,
      AsyncPools pools,
      Executor grantOn,
      Function<Consumer<FleetCap.Held>, TurnStep> steps) {
    AsyncAcquisition acquisition = new AsyncAcquisition(permits, pools, grantOn);
    // Completed by anyone but this acquisition (cancelled, or completed by the caller): it is
    // abandoned. Completed by this acquisition, it is settled already and abandon() does nothing.
    acquisition.result.whenComplete((slot, failure) -> acquisition.abandon());
    acquisition.permit.whenComplete(
        (granted, failure) -> {
          if (failure == null) {
            acquisition.resume(
                () -> steps.apply(acquisition::tookFleetSlot), false, acquisition.grantOn == null);
          }
        });
    return acquisition.result;
  }

  /**
   * Runs {@code next} and the steps it leads to, on this thread while they neither wait nor (when
   * {@code mayBlock} is false, on the scheduler's thread or {@link #grantOn}) make a round trip,
   * nor (when {@code onGrantThread} is false) end a wait, which goes on on {@link #grantOn}.
   */
  private void resume(TurnStep.Next next, boolean mayBlock, boolean onGrantThread) {
    try {
      if (settled.get()) {
        return;
      }
      TurnStep step = next.run();
      while (!settled.get()) {
        if (step instanceof TurnStep.Wait wait) {
          if (wait.nanos() > 0) {
            pendingWait =
                pools
                    .scheduler()
                    .schedule(() -> afterWait(wait.then()), wait.nanos(), TimeUnit.NANOSECONDS);
            return;
          }
          if (!onGrantThread) {
            afterWait(wait.then());
            return;
          }
          step = wait.then().run();
        } else if (step instanceof TurnStep.RoundTrip trip) {
          if (!mayBlock) {
            pools.roundTrips().execute(() -> resume(trip.then(), true, grantOn == null));
            return;
          }
          step = trip.then().run();
        } else if (step instanceof TurnStep.Granted granted) {
          grant(granted.slot());
          return;
        } else {
          throw new IllegalStateException("a turn without a deadline was refused");
        }
      }
    } catch (Throwable t) {
      fail(t);
    }
  }

  /**
   * Goes on after a wait where the turn is to be granted: on this thread (the scheduler's) or on
   * {@link #grantOn}, so that the check for a late turn sees how long that executor took to run it.
   */
  private void afterWait(TurnStep.Next then) {
    if (grantOn == null) {
      resume(then, false, true);
      return;
    }
    try {
      grantOn.execute(() -> resume(then, false, true));
    } catch (Throwable t) {
      fail(t);
    }
  }

  private void tookFleetSlot(FleetCap.Held held) {
    fleetSlot.set(held);
    if (settled.get()) {
      fleetSlot.getAndSet(NOTHING).release();
    }
  }

  private void grant(Slot turn) {
    if (!settled.compareAndSet(false, true)) {
      return;
    }
    Slot slot = turn.holding(fleetSlot.getAndSet(NOTHING));
    if (!result.complete(slot)) {
      slot.close();
    }
  }

  private void fail(Throwable failure) {
    if (settled.compareAndSet(false, true)) {
      giveBack();
      result.completeExceptionally(failure);
    }
  }

  /**
   * The caller cancelled, or completed the future itself: whatever this acquisition holds goes
   * back, and its wait is dropped.
   */
  private void abandon() {
    if (settled.compareAndSet(false, true)) {
      pendingWait.cancel(false);
      giveBack();
    }
  }

  private void giveBack() {
    try {
      fleetSlot.getAndSet(NOTHING).release();
    } finally {
      permits.giveUp(permit);
    }
  }
}
