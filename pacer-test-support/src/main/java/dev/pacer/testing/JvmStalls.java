package dev.pacer.testing;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Stalls of this JVM: spans in which a thread that asked to sleep {@value #NAP_MILLIS} ms ran again
 * late, sampled on a daemon thread for as long as the test JVM runs. A lateness of at least {@value
 * #LEAST_STALL_MILLIS} ms is a stall; every lateness of at least {@value #LEAST_RECORDED_MILLIS} ms
 * is kept, for the turns a shorter one costs at high rates ({@link #turnsInStallsBetween}).
 *
 * <p>Why: on a machine with fewer cores than runnable threads (one core shared by the build, the
 * database, the worker JVMs and the door) every sleeper wakes late at once. A door in this JVM
 * ({@link DoorServer}) then stamps an arrival late by as much as the stall, and the fleet's takers
 * wake late for the turns that fall in it and give those turns up. A fleet test widens the stamp
 * error and the late-turn allowance by the stalls it measured here, in the same run, and by nothing
 * when there were none.
 */
public final class JvmStalls {

  /** How long the sampler sleeps between two looks at the clock. */
  public static final long NAP_MILLIS = 2;

  /** The least lateness taken for a stall: far above a timer's ordinary slack. */
  public static final long LEAST_STALL_MILLIS = 10;

  /**
   * The least lateness kept: the least late-turn limit ({@code dev.pacer.LateTurns}), the lateness
   * that costs a turn at the highest rates.
   */
  public static final long LEAST_RECORDED_MILLIS = 1;

  /** Latenesses kept, oldest dropped first: more than any test's run meets. */
  private static final int KEPT = 100_000;

  private static final long STALL_NANOS = TimeUnit.MILLISECONDS.toNanos(LEAST_STALL_MILLIS);

  private static final JvmStalls INSTANCE = new JvmStalls();

  /**
   * Pairs of (monotonic instant a lateness ended, its length in nanoseconds), oldest first: every
   * lateness of at least {@value #LEAST_RECORDED_MILLIS} ms.
   */
  private final Deque<long[]> stalls = new ArrayDeque<>();

  private JvmStalls() {
    Thread sampler = new Thread(this::sampleForever, "jvm-stalls");
    sampler.setDaemon(true);
    sampler.start();
  }

  private JvmStalls(Consumer<Runnable> start) {
    start.accept(this::sampleForever);
  }

  /** The JVM's sampler, started on first use: call it before the run it is to judge. */
  public static JvmStalls get() {
    return INSTANCE;
  }

  /**
   * A sampler of its own on a thread {@code start} starts, for takers that wake on other threads
   * than the JVM's platform threads: a virtual thread that wakes needs a carrier too, and waits for
   * one while the carriers run others, which a platform thread's sampler never sees. The thread
   * must be a daemon, or stop with the JVM.
   */
  public static JvmStalls startedBy(Consumer<Runnable> start) {
    return new JvmStalls(start);
  }

  private void sampleForever() {
    long nap = TimeUnit.MILLISECONDS.toNanos(NAP_MILLIS);
    long least = TimeUnit.MILLISECONDS.toNanos(LEAST_RECORDED_MILLIS);
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
    for (long length : between(fromNanos, toNanos, STALL_NANOS)) {
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
    for (long length : between(fromNanos, toNanos, STALL_NANOS)) {
      total += length;
    }
    return total;
  }

  /**
   * The turns at {@code ratePerSecond} that latenesses ended between {@code fromNanos} and {@code
   * toNanos} may have cost, for takers that give a turn up when they wake for it more than {@code
   * lateLimitNanos} after it began: a turn that began in a lateness of length {@code L} was woken
   * for up to {@code L} late, so the turns of the last {@code L - lateLimitNanos} of it are given
   * up, rounded up to whole turns.
   */
  public long turnsInStallsBetween(
      long fromNanos, long toNanos, long lateLimitNanos, double ratePerSecond) {
    long turns = 0;
    for (long length : between(fromNanos, toNanos, lateLimitNanos + 1)) {
      turns += turnsGivenUp(length, lateLimitNanos, ratePerSecond);
    }
    return turns;
  }

  /** The turns a lateness of {@code lengthNanos} may cost: see {@link #turnsInStallsBetween}. */
  static long turnsGivenUp(long lengthNanos, long lateLimitNanos, double ratePerSecond) {
    return lengthNanos <= lateLimitNanos
        ? 0
        : (long) Math.ceil((lengthNanos - lateLimitNanos) * ratePerSecond / 1e9);
  }

  private List<Long> between(long fromNanos, long toNanos, long leastNanos) {
    List<Long> lengths = new ArrayList<>();
    synchronized (stalls) {
      for (long[] stall : stalls) {
        if (stall[0] - fromNanos >= 0 && toNanos - stall[0] >= 0 && stall[1] >= leastNanos) {
          lengths.add(stall[1]);
        }
      }
    }
    return lengths;
  }
}
