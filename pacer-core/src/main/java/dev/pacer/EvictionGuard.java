package dev.pacer;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * Whether a limiter's registry may let go of it ({@link LimiterRegistry#evictIdle}), and what
 * brings it back: a count of the calls into the limiter in progress, or the mark that it was
 * evicted.
 *
 * <p>An eviction is one compare-and-set from "no call in progress" to "evicted", and each call
 * begins with one from "n calls" to "n + 1", so the two never interleave: the registry judges the
 * limiter idle ({@link #evictIf}) while no caller can take a turn or record a hold in it, and a
 * call into an evicted limiter (made by a caller that kept it) first has its registry take it back
 * ({@link #enter}), so that a limiter in use is always its registry's, listening to the cursor and
 * heard by the registry's listeners. The registry keeps an evicted limiter until nothing else holds
 * it, so there is never a second one for its destination in the process: two would each pace
 * locally at the process's share while the cursor is unavailable, and the fleet would pass its
 * ceiling.
 */
final class EvictionGuard {

  private static final int EVICTED = -1;

  private final AtomicInteger calls = new AtomicInteger();
  private final Runnable takeBack;

  /**
   * @param takeBack has the registry take the limiter back; it ends by calling {@link #reopen}
   */
  EvictionGuard(Runnable takeBack) {
    this.takeBack = takeBack;
  }

  /** A call begins; if the limiter was evicted, its registry takes it back first. */
  void enter() {
    while (true) {
      int inProgress = calls.get();
      if (inProgress == EVICTED) {
        takeBack.run();
      } else if (calls.compareAndSet(inProgress, inProgress + 1)) {
        return;
      }
    }
  }

  /** The call that {@link #enter} began has ended. */
  void exit() {
    calls.decrementAndGet();
  }

  /**
   * Marks the limiter evicted if no call is in progress and {@code idle} says it is idle; {@code
   * idle} is asked while no call can begin. Called under the registry's lock.
   *
   * @param idle whether the limiter is idle
   * @return whether it is now evicted
   */
  boolean evictIf(BooleanSupplier idle) {
    if (!calls.compareAndSet(0, EVICTED)) {
      return false;
    }
    if (idle.getAsBoolean()) {
      return true;
    }
    calls.compareAndSet(EVICTED, 0);
    return false;
  }

  /** The registry holds the limiter again: calls may begin. */
  void reopen() {
    calls.compareAndSet(EVICTED, 0);
  }
}
