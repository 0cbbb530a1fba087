package dev.pacer.cli.run;

import dev.pacer.TimeSource;
import dev.pacer.cli.db.FrontierStore.Claim;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Where a per-host worker's fetch threads wait to claim: one waker per process.
 *
 * <h2>Why</h2>
 *
 * An idle claim ({@link Claim.Idle}) answers when the soonest host's turn can be claimed. Every
 * idle thread of a process gets the same answer; if each slept until it, all would claim at that
 * instant for what is usually one due turn: one claim takes the host, and the others find its row
 * locked by that claim ({@code SKIP LOCKED}) while its committed {@code next_at} still reads due.
 * Each of those is a round trip that fetches nothing, on every turn, for every idle thread
 * (measured with 500 hosts at 0.5/s, 3 processes of 8 threads: 18 to 39 % of all claims).
 *
 * <h2>How</h2>
 *
 * The gate lets through at most {@code width} claims at once, and none before a time ({@code
 * closedUntil}, the last idle answer's wake).
 *
 * <ul>
 *   <li>An idle answer closes the gate until its wake and narrows it to one claim. Until the wake
 *       one thread, the waker, sleeps; the others wait on the gate without a time of their own. At
 *       the wake one claim goes.
 *   <li>Each claim that finds a host widens the gate by one, up to {@code threads}: the claim's own
 *       thread may claim again, and so may one more. The width doubles with each round of claims
 *       that all find a host (1, 2, 4, 8: every thread of 8 claims again after three rounds), so
 *       when many hosts fall due together (a run's start; many hosts at high rates) the claims are
 *       back at full width within three round trips, and the first claim that finds nothing
 *       narrows the gate to one again. At a wake with one due turn, the waker's claim takes it and
 *       lets two claims go, which find nothing and close the gate: a turn costs three claims, not
 *       one per idle thread of each process.
 * </ul>
 *
 * Measured in the frontier bench (500 hosts at 0.5/s, a Zipf backlog of 721 items, 3 processes of
 * 8 threads; two cores shared with other builds, load average 2 to 14; docs/benchmarks.md): 1,194
 * to 1,297 claims for the 721 items, where threads that each sleep to the wake made 3,057 and
 * 3,906 (main: 6,200 to 6,807); the run's lowest 10-s window, its first, 0.64 to 0.77 of its base (threads that each sleep to the wake: 0.79 and 0.89; main
 * 0.58 to 0.85). The burst needs the width back fast: every host is due at once and what the
 * claims carry is what the threads carry, so a gate that widened by one claim per round trip
 * would hold the claims at a fraction of the threads for a run's first seconds.
 *
 * A claim answered {@link Claim.Refused}, {@link Claim.Lost} or {@link Claim.LockedOut} took no
 * turn from the frontier's order and is made again at once. An idle answer whose soonest host is
 * {@linkplain Claim.Idle#held() held} (due, but at its in-flight cap, waiting for a retry time, or
 * its row locked by a concurrent claim: another process's, at the same wake) closes the gate for
 * at most {@link #POLL}: when such a host will be claimable again is not known. Once a claim finds
 * the job has nothing left, {@link #finish} lets every thread go.
 *
 * <p>The decisions ({@link #pass}, {@link #answered}) are a state machine read on the injected
 * clock; {@link #enter} is the thin blocking loop around them.
 */
final class ClaimGate {

  /** The longest an idle answer closes the gate when a due host's next claimable time is unknown. */
  static final Duration POLL = Duration.ofMillis(250);

  /** What a thread at the gate is to do. */
  sealed interface Pass {
    /** Claim now. */
    record Go() implements Pass {}

    /** Be the process's waker: sleep this long (nanoseconds), then ask again. */
    record Sleep(long nanos) implements Pass {}

    /** Another thread is waking or claiming for the process: wait until it answers. */
    record Wait() implements Pass {}

    /** The job has nothing left to claim. */
    record Finished() implements Pass {}
  }

  private static final Pass GO = new Pass.Go();
  private static final Pass WAIT = new Pass.Wait();
  private static final Pass FINISHED = new Pass.Finished();

  private final TimeSource time;
  private final int threads;
  /** Claims that may be in flight at once. */
  private int width = 1;
  /** No claim before this (nanoTime): the last idle answer's wake. */
  private long closedUntil;
  private boolean sleeper;
  private int inFlight;
  private boolean finished;

  /**
   * For a process of {@code threads} fetch threads. The gate starts one claim wide and due now: the
   * first claim goes alone, and the width doubles from there while the claims find hosts.
   */
  ClaimGate(TimeSource time, int threads) {
    this.time = time;
    this.threads = Math.max(1, threads);
    this.closedUntil = time.nanoTime();
  }

  /**
   * What the calling thread is to do now. A {@link Pass.Go} counts a claim in flight, to be told
   * with {@link #answered} or {@link #abandoned}; a {@link Pass.Sleep} makes the caller the waker,
   * to be told with {@link #woke}.
   */
  synchronized Pass pass() {
    if (finished) {
      return FINISHED;
    }
    long now = time.nanoTime();
    if (now - closedUntil >= 0) {
      if (inFlight < width) {
        inFlight++;
        return GO;
      }
      return WAIT;
    }
    if (!sleeper) {
      sleeper = true;
      return new Pass.Sleep(closedUntil - now);
    }
    return WAIT;
  }

  /** The waker is awake (its sleep ended or was cut short): another thread may be the next. */
  synchronized void woke() {
    sleeper = false;
  }

  /** A claim let through by {@link #pass} answered {@code claim}. */
  synchronized void answered(Claim claim) {
    inFlight--;
    long now = time.nanoTime();
    if (claim instanceof Claim.Idle idle) {
      width = 1;
      long pause = idle.wake().orElse(POLL).toNanos();
      if (idle.held()) {
        pause = Math.min(pause, POLL.toNanos());
      }
      closedUntil = now + pause;
    } else {
      if (claim instanceof Claim.Claimed) {
        width = Math.min(threads, width + 1);
      }
      // A host was due, or a claim is to be made again: the next claim may go at once.
      if (now - closedUntil < 0) {
        closedUntil = now;
      }
    }
    notifyAll();
  }

  /** A claim let through by {@link #pass} got no answer (stopped, or it threw). */
  synchronized void abandoned() {
    inFlight--;
    notifyAll();
  }

  /** The job has nothing left: every thread at the gate, and every one arriving, goes. */
  synchronized void finish() {
    finished = true;
    notifyAll();
  }

  /**
   * Blocks until the calling thread may claim (true), or the job has nothing left or {@code stop}
   * says so (false). A thread that waits without a time of its own looks at {@code stop} every
   * {@link #POLL}.
   */
  boolean enter(BooleanSupplier stop) throws InterruptedException {
    synchronized (this) {
      while (!stop.getAsBoolean()) {
        Pass p = pass();
        if (p instanceof Pass.Go) {
          return true;
        } else if (p instanceof Pass.Finished) {
          return false;
        } else if (p instanceof Pass.Sleep s) {
          try {
            TimeUnit.NANOSECONDS.timedWait(this, s.nanos());
          } finally {
            woke();
          }
        } else {
          TimeUnit.NANOSECONDS.timedWait(this, POLL.toNanos());
        }
      }
      return false;
    }
  }
}
