package dev.pacer.testing;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Stalls of this JVM: spans in which a thread that asked to sleep {@value #NAP_MILLIS} ms ran again
 * at least {@value #LEAST_STALL_MILLIS} ms late, sampled on a daemon thread for as long as the test
 * JVM runs.
 *
 * <p>Why: on a machine with fewer cores than runnable threads (one core shared by the build, the
 * database, the worker JVMs and the door) every sleeper wakes late at once. A door in this JVM
 * ({@link DoorServer}) then stamps an arrival late by as much as the stall, and the fleet's takers
 * wake late for the turns that fall in it and give those turns up. A fleet test widens the stamp
 * error and the late-turn allowance by the stall it measured here, in the same run, and by nothing
 * when there was none.
 */
public final class JvmStalls {

  /** How long the sampler sleeps between two looks at the clock. */
  public static final long NAP_MILLIS = 2;

  /** The least lateness taken for a stall: far above a timer's ordinary slack. */
  public static final long LEAST_STALL_MILLIS = 10;

  /** Stalls kept, oldest dropped first: more than any test's run meets. */
  private static final int KEPT = 10_000;

  private static final JvmStalls INSTANCE = new JvmStalls();

  /** Pairs of (monotonic instant the stall ended, its length in nanoseconds), oldest first. */
  private final Deque<long[]> stalls = new ArrayDeque<>();

  private JvmStalls() {
    Thread sampler = new Thread(this::sampleForever, "jvm-stalls");
    sampler.setDaemon(true);
    sampler.start();
  }

  /** The JVM's sampler, started on first use: call it before the run it is to judge. */
  public static JvmStalls get() {
    return INSTANCE;
  }

  private void sampleForever() {
    long nap = TimeUnit.MILLISECONDS.toNanos(NAP_MILLIS);
    long least = TimeUnit.MILLISECONDS.toNanos(LEAST_STALL_MILLIS);
    long before = System.nanoTime();
    while (!Thread.currentThread().isInterrupted()) {
      LockSupport.parkNanos(nap);
      long now = System.nanoTime();
      long late = now - before - nap;
      if (late >= least) {
        synchronized (stalls) {
          stalls.addLast(new long[] {now, late});
          if (stalls.size() > KEPT) {
            stalls.removeFirst();
          }
        }
      }
      before = now;
    }
  }

  /**
   * The longest stall, in nanoseconds, that ended between the monotonic instants {@code fromNanos}
   * and {@code toNanos} (this JVM's {@link System#nanoTime}); 0 if there was none.
   */
  public long longestBetween(long fromNanos, long toNanos) {
    long longest = 0;
    for (long length : between(fromNanos, toNanos)) {
      longest = Math.max(longest, length);
    }
    return longest;
  }

  /**
   * The stalls that ended between {@code fromNanos} and {@code toNanos}, added up, in nanoseconds:
   * the time this JVM's sleepers spent waiting for a CPU past their wake-up.
   */
  public long totalBetween(long fromNanos, long toNanos) {
    long total = 0;
    for (long length : between(fromNanos, toNanos)) {
      total += length;
    }
    return total;
  }

  private List<Long> between(long fromNanos, long toNanos) {
    List<Long> lengths = new ArrayList<>();
    synchronized (stalls) {
      for (long[] stall : stalls) {
        if (stall[0] - fromNanos >= 0 && toNanos - stall[0] >= 0) {
          lengths.add(stall[1]);
        }
      }
    }
    return lengths;
  }
}
