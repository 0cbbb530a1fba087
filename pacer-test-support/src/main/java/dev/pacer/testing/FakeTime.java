package dev.pacer.testing;

import dev.pacer.TimeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A clock that only moves when told to, or when someone sleeps on it: a sleep records its length
 * and advances the clock by it, so tests observe pacing as a list of waits without waiting.
 */
public final class FakeTime implements TimeSource {

  private long now = 1_000_000_000L;
  private final List<Long> sleeps = new ArrayList<>();
  private RuntimeException failNextSleepWith;
  private Runnable onNextSleep;

  @Override
  public synchronized long nanoTime() {
    return now;
  }

  @Override
  public void sleepNanos(long nanos) throws InterruptedException {
    Runnable hook;
    synchronized (this) {
      hook = onNextSleep;
      onNextSleep = null;
      if (failNextSleepWith != null) {
        RuntimeException e = failNextSleepWith;
        failNextSleepWith = null;
        throw e;
      }
      sleeps.add(nanos);
      now += Math.max(0, nanos);
    }
    if (hook != null) {
      hook.run();
    }
    if (Thread.currentThread().isInterrupted()) {
      throw new InterruptedException("interrupted during a fake sleep");
    }
  }

  @Override
  public synchronized long epochMillis() {
    return 1_800_000_000_000L + now / 1_000_000L;
  }

  public synchronized void advance(Duration d) {
    now += d.toNanos();
  }

  /** The lengths of all sleeps so far, in milliseconds (rounded). */
  public synchronized List<Long> sleepsMillis() {
    List<Long> out = new ArrayList<>();
    for (long s : sleeps) {
      out.add(Math.round(s / 1e6));
    }
    return out;
  }

  public synchronized long lastSleepMillis() {
    return Math.round(sleeps.get(sleeps.size() - 1) / 1e6);
  }

  /** Runs {@code action} during the next sleep, after the clock has advanced. */
  public synchronized void duringNextSleep(Runnable action) {
    this.onNextSleep = action;
  }

  public synchronized void failNextSleep(RuntimeException e) {
    this.failNextSleepWith = e;
  }
}
