package dev.pacer;

import java.util.ArrayDeque;
import java.util.OptionalLong;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A limiter's {@code maxConcurrency} permits, handed out first come first served to blocked threads
 * and to {@link DestinationLimiter#acquireAsync() asynchronous} acquisitions alike: one queue, so
 * neither kind can overtake the other.
 *
 * <p>Each waiter is a {@link CompletableFuture} in the queue, completed when a permit is handed to
 * it. A blocked thread waits on its future ({@link CompletableFuture#get()} parks, so a virtual
 * thread waiting here leaves its carrier); an asynchronous acquisition waits on nothing. A waiter
 * that gives up cancels its future: if the cancel loses the race with the hand-over, the permit it
 * was handed goes back, to the next waiter. The lock is held only to move a permit or a waiter,
 * never while completing a future, so no waiter's code runs under it.
 *
 * <p>It also knows since when every permit has been in with no one waiting ({@link #allInSince}):
 * from then on no request of the limiter is in flight or about to be, which is where the idle time
 * its registry evicts it by begins.
 */
final class Permits {

  static {
    // A waiter interrupted gives up: its future's get throws InterruptedException, and it cancels
    // the future, whose first cancel in the JVM initializes CancellationException and, through the
    // withdrawal it triggers, CompletionException and the dependent's classes. A virtual thread
    // that meets a class another thread is loading or initializing pins its carrier while it waits
    // (JDK 25 too), and an application that stops many waiters at once, interrupting them, has them
    // meet that path together: one waiter walks it here instead, through the same methods, where
    // the first limiter is built, the interrupt status of this thread left as it was.
    boolean interrupted = Thread.interrupted();
    Thread.currentThread().interrupt();
    try {
      new Permits(0, TimeSource.SYSTEM).acquire();
      throw new AssertionError("a waiter with no permit to wait for returned");
    } catch (InterruptedException expected) {
      // The path met; get cleared the interrupt it threw for.
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private final ArrayDeque<CompletableFuture<Void>> waiters = new ArrayDeque<>();
  private final int capacity;
  private final TimeSource time;
  private int available;
  private long allInSince;

  Permits(int permits, TimeSource time) {
    this.capacity = permits;
    this.available = permits;
    this.time = time;
    this.allInSince = time.nanoTime();
  }

  /** A future completed when this caller holds a permit; cancelling it before then gives up. */
  CompletableFuture<Void> acquireAsync() {
    CompletableFuture<Void> waiter = new CompletableFuture<>();
    synchronized (this) {
      if (available > 0 && waiters.isEmpty()) {
        available--;
        waiter.complete(null);
        return waiter;
      }
      waiters.addLast(waiter);
    }
    waiter.whenComplete(
        (done, failure) -> {
          if (waiter.isCancelled()) {
            withdraw(waiter);
          }
        });
    return waiter;
  }

  /** Waits for a permit, in turn. */
  void acquire() throws InterruptedException {
    CompletableFuture<Void> waiter = acquireAsync();
    try {
      waiter.get();
    } catch (InterruptedException e) {
      giveUp(waiter);
      throw e;
    } catch (ExecutionException | CancellationException e) {
      throw new IllegalStateException("a permit waiter is only ever completed normally", e);
    }
  }

  /** Waits for a permit for at most {@code timeout} nanoseconds; returns whether one is held. */
  boolean tryAcquire(long timeoutNanos) throws InterruptedException {
    CompletableFuture<Void> waiter = acquireAsync();
    try {
      waiter.get(timeoutNanos, TimeUnit.NANOSECONDS);
      return true;
    } catch (TimeoutException e) {
      return !waiter.cancel(false);
    } catch (InterruptedException e) {
      giveUp(waiter);
      throw e;
    } catch (ExecutionException | CancellationException e) {
      throw new IllegalStateException("a permit waiter is only ever completed normally", e);
    }
  }

  /**
   * Gives up {@code waiter}: withdrawn if still queued, or its permit given back if it was handed
   * one meanwhile.
   */
  void giveUp(CompletableFuture<Void> waiter) {
    if (!waiter.cancel(false)) {
      release();
    }
  }

  /** Hands a permit to the longest waiter still waiting, or keeps it if none is. */
  void release() {
    while (true) {
      CompletableFuture<Void> next;
      synchronized (this) {
        next = waiters.pollFirst();
        if (next == null) {
          available++;
          if (available == capacity) {
            allInSince = time.nanoTime();
          }
          return;
        }
      }
      if (next.complete(null)) {
        return;
      }
    }
  }

  synchronized int available() {
    return available;
  }

  /**
   * Since when (on the limiter's clock) every permit has been in with no one waiting; empty while a
   * permit is out or a caller waits for one.
   */
  synchronized OptionalLong allInSince() {
    return available == capacity && waiters.isEmpty()
        ? OptionalLong.of(allInSince)
        : OptionalLong.empty();
  }

  /** Waiters queued now (a cancelled one leaves the queue as it is cancelled). */
  synchronized int waiting() {
    return waiters.size();
  }

  private synchronized void withdraw(CompletableFuture<Void> waiter) {
    waiters.remove(waiter);
  }
}
