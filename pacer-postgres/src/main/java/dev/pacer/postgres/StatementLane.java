package dev.pacer.postgres;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiPredicate;
import java.util.function.Function;

/**
 * One connection's statements, shared by the threads that wait for it: while one statement runs,
 * the calls that arrive queue, and whichever of them takes the connection next makes them all,
 * those that can share a statement in one. On a busy process the statements grow with the load
 * rather than multiply; an idle one makes each call alone, as it arrives. {@link PostgresCursor}
 * makes the reservations of its fetch threads so (one statement reserves {@code k} consecutive
 * turns for {@code k} callers), and {@code pacer fetch} its claims and records of items.
 *
 * <p>How calls are made together is the owner's: {@code shareAStatement} says which calls go
 * together, and {@code maker} makes one such group, answering each call in the order the calls
 * queued. Answers are values: a failure the caller should see is one of them. A group whose maker
 * throws instead is answered with {@code unmade}'s answer to what it threw, and the groups after it
 * are made as usual: no caller is left waiting for an answer that never comes.
 *
 * <p>The lane is also the connection's lock for whatever else the owner runs on it ({@link #hold},
 * {@link #tryHold}, {@link #release}). A release wakes the first call queued, so that a queued call
 * never waits out its {@value #RECHECK_MILLIS}-ms recheck while the connection is free.
 *
 * @param <A> what a call asks
 * @param <R> what a call is answered
 */
public final class StatementLane<A, R> {

  /**
   * Makes one group of calls that share a statement.
   *
   * @param <A> what a call asks
   * @param <R> what a call is answered
   */
  @FunctionalInterface
  public interface Maker<A, R> {

    /**
     * Makes {@code asks} together, with the lane held.
     *
     * @param asks the group's calls, in the order they queued; never empty
     * @return one answer for each call, in the same order
     */
    List<R> make(List<A> asks);
  }

  /** How long a queued call sleeps before it looks at the lane again unwoken. */
  private static final long RECHECK_MILLIS = 20;

  private final ReentrantLock lane = new ReentrantLock();
  private final ConcurrentLinkedQueue<Call<A, R>> queue = new ConcurrentLinkedQueue<>();
  private final BiPredicate<A, A> shareAStatement;
  private final Maker<A, R> maker;
  private final Function<RuntimeException, R> unmade;

  /**
   * A lane that makes calls with {@code maker}, grouped by {@code shareAStatement}.
   *
   * @param shareAStatement whether two calls can be made in one statement
   * @param maker makes a group of calls
   * @param unmade the answer of each call of a group whose {@code maker} threw, from what it threw
   */
  public StatementLane(
      BiPredicate<A, A> shareAStatement, Maker<A, R> maker, Function<RuntimeException, R> unmade) {
    this.shareAStatement = Objects.requireNonNull(shareAStatement, "shareAStatement");
    this.maker = Objects.requireNonNull(maker, "maker");
    this.unmade = Objects.requireNonNull(unmade, "unmade");
  }

  /**
   * Queues {@code ask} and returns its answer, made by this thread or by another one waiting.
   *
   * @param ask what the call asks
   * @return its answer; empty if this thread was interrupted before its call was taken into a
   *     statement (it is then never made, and the thread's interrupt status is set)
   */
  public Optional<R> call(A ask) {
    Call<A, R> me = new Call<>(ask);
    queue.add(me);
    boolean interrupted = false;
    try {
      while (me.answer == null) {
        if (lane.tryLock()) {
          try {
            if (me.answer == null) {
              makeQueued();
            }
          } finally {
            release();
          }
        } else {
          LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(RECHECK_MILLIS));
          if (Thread.interrupted()) {
            interrupted = true;
            // Not taken into a statement yet: dropped. Taken: its answer is coming.
            if (queue.remove(me)) {
              return Optional.empty();
            }
          }
        }
      }
      return Optional.of(me.answer);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Takes the lane for other work on the connection, waiting as long as it takes. */
  public void hold() {
    lane.lock();
  }

  /**
   * Takes the lane for other work on the connection, unless interrupted first.
   *
   * @throws InterruptedException if interrupted while waiting
   */
  public void holdInterruptibly() throws InterruptedException {
    lane.lockInterruptibly();
  }

  /**
   * Takes the lane for other work on the connection if it comes free within {@code timeout}.
   *
   * @param timeout how long to wait
   * @param unit the timeout's unit
   * @return whether the lane is held
   * @throws InterruptedException if interrupted while waiting
   */
  public boolean tryHold(long timeout, TimeUnit unit) throws InterruptedException {
    return lane.tryLock(timeout, unit);
  }

  /** Gives the lane up, taken by this thread, and wakes the first call queued, if any. */
  public void release() {
    lane.unlock();
    Call<A, R> first = queue.peek();
    if (first != null) {
      LockSupport.unpark(first.thread);
    }
  }

  /**
   * Calls queued now and not yet taken into a statement.
   *
   * @return how many
   */
  public int queued() {
    return queue.size();
  }

  /** With the lane held: makes every call queued now, those that share a statement together. */
  private void makeQueued() {
    List<Call<A, R>> taken = new ArrayList<>();
    for (Call<A, R> c; (c = queue.poll()) != null; ) {
      taken.add(c);
    }
    try {
      while (!taken.isEmpty()) {
        A first = taken.get(0).ask;
        List<Call<A, R>> together = new ArrayList<>();
        List<Call<A, R>> rest = new ArrayList<>();
        for (Call<A, R> c : taken) {
          (shareAStatement.test(c.ask, first) ? together : rest).add(c);
        }
        makeTogether(together);
        taken = rest;
      }
    } catch (Error e) {
      // No call taken is left waiting for an answer that never comes.
      RuntimeException notMade = new IllegalStateException("not made: " + e, e);
      taken.stream().filter(c -> c.answer == null).forEach(c -> c.answer(unmade.apply(notMade)));
      throw e;
    }
  }

  private void makeTogether(List<Call<A, R>> together) {
    List<A> asks = new ArrayList<>(together.size());
    together.forEach(c -> asks.add(c.ask));
    List<R> answers;
    try {
      answers = maker.make(asks);
      if (answers.size() != asks.size()) {
        throw new IllegalStateException(
            answers.size() + " answers made for " + asks.size() + " calls");
      }
    } catch (RuntimeException e) {
      R failed = unmade.apply(e);
      together.forEach(c -> c.answer(failed));
      return;
    }
    for (int j = 0; j < together.size(); j++) {
      together.get(j).answer(answers.get(j));
    }
  }

  /** A queued call; answered once, then woken. */
  private static final class Call<A, R> {
    final A ask;
    final Thread thread = Thread.currentThread();
    volatile R answer;

    Call(A ask) {
      this.ask = ask;
    }

    void answer(R given) {
      answer = given;
      if (thread != Thread.currentThread()) {
        LockSupport.unpark(thread);
      }
    }
  }
}
