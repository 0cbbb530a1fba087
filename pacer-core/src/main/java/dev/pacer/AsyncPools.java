package dev.pacer;

import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Where {@link DestinationLimiter#acquireAsync()} does its work: a scheduler on which each wait
 * until a turn is a scheduled task (no thread is held while it lasts), and an executor on which
 * each round trip to the cursor or the fleet's slots runs (a JDBC call blocks its thread). Give a
 * {@link LimiterRegistry} your own to share your application's pools, or to drive the waits from a
 * test's fake clock.
 *
 * <p><b>Who owns the pools.</b> {@link #of} leaves them yours: Pacer never shuts them down, and
 * once you do, acquisitions still waiting complete exceptionally ({@code
 * RejectedExecutionException}) with their permits given back. {@link #defaults()} are Pacer's, one
 * pair per JVM shared by every registry that does not bring its own, created at the first {@code
 * acquireAsync()} (a process that only calls {@code acquire()} starts no thread): one scheduler
 * thread and at most {@value #DEFAULT_ROUND_TRIP_THREADS} round-trip threads, all daemons whose
 * threads end after {@value #DEFAULT_IDLE_SECONDS} s idle. Nothing needs closing, and nothing can
 * be closed: pools shared by every registry of the JVM belong to none of them.
 *
 * <p>The scheduler's thread completes the futures ({@link java.util.concurrent.CompletableFuture}
 * runs a dependent stage added with {@code thenApply}, {@code thenCompose} and so on on the thread
 * that completes it), and with the default pools that is one thread for every turn of the JVM. Run
 * the sending stage with the {@code ...Async} variants on an executor of your own: even a send that
 * does not block costs that thread time, which every later turn of the JVM waits behind, and a turn
 * it wakes for late is given up and taken again (the run slows; the ceiling holds).
 * docs/integrations.md ("Asynchronous acquire") has what that costs a run.
 */
public final class AsyncPools {

  static final int DEFAULT_ROUND_TRIP_THREADS = 4;
  static final int DEFAULT_IDLE_SECONDS = 10;

  // Suppliers, so that the default pools are created only when first asked for.
  private static final AsyncPools DEFAULTS =
      new AsyncPools(() -> Shared.SCHEDULER, () -> Shared.ROUND_TRIPS, "AsyncPools.defaults()");

  private final Supplier<ScheduledExecutorService> scheduler;
  private final Supplier<Executor> roundTrips;
  private final String description;

  private AsyncPools(
      Supplier<ScheduledExecutorService> scheduler,
      Supplier<Executor> roundTrips,
      String description) {
    this.scheduler = scheduler;
    this.roundTrips = roundTrips;
    this.description = description;
  }

  /**
   * Waits scheduled on {@code scheduler}, round trips run on {@code roundTrips}; both stay the
   * caller's to shut down.
   *
   * @param scheduler where every wait is a scheduled task, and whose thread completes the futures
   * @param roundTrips where reservations and fleet-slot claims run
   * @return pools that Pacer never shuts down
   */
  public static AsyncPools of(ScheduledExecutorService scheduler, Executor roundTrips) {
    Objects.requireNonNull(scheduler, "scheduler");
    Objects.requireNonNull(roundTrips, "round-trip executor");
    return new AsyncPools(
        () -> scheduler,
        () -> roundTrips,
        "AsyncPools{scheduler=" + scheduler + ", roundTrips=" + roundTrips + "}");
  }

  /**
   * Pacer's own pools, shared by the JVM and created on first use (see the class comment).
   *
   * @return the JVM's default pools
   */
  public static AsyncPools defaults() {
    return DEFAULTS;
  }

  ScheduledExecutorService scheduler() {
    return scheduler.get();
  }

  Executor roundTrips() {
    return roundTrips.get();
  }

  @Override
  public String toString() {
    return description;
  }

  /** The default pools, created when this class is first used: at the first acquireAsync(). */
  private static final class Shared {

    static final ScheduledThreadPoolExecutor SCHEDULER = scheduler();
    static final ThreadPoolExecutor ROUND_TRIPS = roundTrips();

    private static ScheduledThreadPoolExecutor scheduler() {
      ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(1, daemons("pacer-turns"));
      // A cancelled acquisition's wait leaves the queue at once, not when it would have ended.
      pool.setRemoveOnCancelPolicy(true);
      pool.setKeepAliveTime(DEFAULT_IDLE_SECONDS, TimeUnit.SECONDS);
      pool.allowCoreThreadTimeOut(true);
      return pool;
    }

    private static ThreadPoolExecutor roundTrips() {
      return pool(DEFAULT_ROUND_TRIP_THREADS, "pacer-round-trip");
    }

    private static ThreadPoolExecutor pool(int threads, String name) {
      ThreadPoolExecutor pool =
          new ThreadPoolExecutor(
              threads,
              threads,
              DEFAULT_IDLE_SECONDS,
              TimeUnit.SECONDS,
              new LinkedBlockingQueue<>(),
              daemons(name));
      pool.allowCoreThreadTimeOut(true);
      return pool;
    }

    private static ThreadFactory daemons(String name) {
      AtomicInteger count = new AtomicInteger();
      return task -> {
        Thread t = new Thread(task, name + "-" + count.incrementAndGet());
        t.setDaemon(true);
        return t;
      };
    }
  }
}
