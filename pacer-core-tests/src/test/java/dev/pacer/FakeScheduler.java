package dev.pacer;

import dev.pacer.testing.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.Executors;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A scheduler (and executor) on a {@link FakeTime}: nothing runs until the test says so, on the
 * test's own thread, and a task scheduled for later runs once {@link #runUntilIdle} has moved the
 * clock to it. Records the delay of every task scheduled for later, the asynchronous path's
 * counterpart of {@link FakeTime#sleepsMillis()}.
 */
public final class FakeScheduler extends AbstractExecutorService
    implements ScheduledExecutorService {

  private final FakeTime time;
  private final PriorityQueue<Task> queue = new PriorityQueue<>();
  private final List<Long> waits = new ArrayList<>();
  private long sequence;
  private boolean shutdown;
  private Runnable onNextWait;

  public FakeScheduler(FakeTime time) {
    this.time = time;
  }

  /**
   * Runs every task, earliest first, moving the clock to each task's instant, until none is left;
   * returns how many ran.
   */
  public int runUntilIdle() {
    int ran = 0;
    while (true) {
      Task next;
      Runnable hook = null;
      synchronized (this) {
        next = queue.poll();
        if (next == null) {
          return ran;
        }
        long ahead = next.due - time.nanoTime();
        if (ahead > 0) {
          time.advance(Duration.ofNanos(ahead));
          hook = onNextWait;
          onNextWait = null;
        }
      }
      if (hook != null) {
        hook.run();
      }
      next.run();
      ran++;
    }
  }

  /** Runs the tasks due now (not those scheduled for later), without moving the clock. */
  public int runDue() {
    return runFor(Duration.ZERO);
  }

  /**
   * Runs the tasks due within {@code d} from now, earliest first, moving the clock to each; the
   * clock ends at the last task run (a poll that never ends stops here, at the limit).
   */
  public int runFor(Duration d) {
    long limit = time.nanoTime() + d.toNanos();
    int ran = 0;
    while (true) {
      Task next;
      synchronized (this) {
        next = queue.peek();
        if (next == null || next.due - limit > 0) {
          return ran;
        }
        queue.poll();
        long ahead = next.due - time.nanoTime();
        if (ahead > 0) {
          time.advance(Duration.ofNanos(ahead));
        }
      }
      next.run();
      ran++;
    }
  }

  /** Runs {@code action} at the end of the next wait: after the clock moved, before the task. */
  public synchronized void duringNextWait(Runnable action) {
    this.onNextWait = action;
  }

  /** The delays of the tasks scheduled for later, in milliseconds (rounded). */
  public synchronized List<Long> waitsMillis() {
    List<Long> out = new ArrayList<>();
    waits.forEach(w -> out.add(Math.round(w / 1e6)));
    return out;
  }

  /** Tasks not yet run (a cancelled one leaves at once). */
  public synchronized int pending() {
    return queue.size();
  }

  @Override
  public void execute(Runnable command) {
    enqueue(Executors.callable(command), 0);
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return enqueue(Executors.callable(command), unit.toNanos(delay));
  }

  @Override
  @SuppressWarnings("unchecked")
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    return (ScheduledFuture<V>) (ScheduledFuture<?>) enqueue(callable, unit.toNanos(delay));
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(
      Runnable command, long initialDelay, long period, TimeUnit unit) {
    throw new UnsupportedOperationException("Pacer schedules one-shot waits only");
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(
      Runnable command, long initialDelay, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException("Pacer schedules one-shot waits only");
  }

  private synchronized <V> Task enqueue(Callable<V> callable, long delayNanos) {
    if (shutdown) {
      throw new RejectedExecutionException("fake scheduler shut down");
    }
    if (delayNanos > 0) {
      waits.add(delayNanos);
    }
    Task task = new Task(callable, time.nanoTime() + Math.max(0, delayNanos), sequence++);
    queue.add(task);
    return task;
  }

  @Override
  public synchronized void shutdown() {
    shutdown = true;
  }

  @Override
  public synchronized List<Runnable> shutdownNow() {
    shutdown = true;
    List<Runnable> left = new ArrayList<>(queue);
    queue.clear();
    return left;
  }

  @Override
  public synchronized boolean isShutdown() {
    return shutdown;
  }

  @Override
  public synchronized boolean isTerminated() {
    return shutdown && queue.isEmpty();
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return isTerminated();
  }

  private final class Task extends FutureTask<Object> implements ScheduledFuture<Object> {
    final long due;
    final long seq;

    @SuppressWarnings("unchecked")
    Task(Callable<?> callable, long due, long seq) {
      super((Callable<Object>) callable);
      this.due = due;
      this.seq = seq;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      if (cancelled) {
        synchronized (FakeScheduler.this) {
          queue.remove(this);
        }
      }
      return cancelled;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(due - time.nanoTime(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed other) {
      Task o = (Task) other;
      int byDue = Long.compare(due - o.due, 0);
      return byDue != 0 ? byDue : Long.compare(seq, o.seq);
    }
  }
}
