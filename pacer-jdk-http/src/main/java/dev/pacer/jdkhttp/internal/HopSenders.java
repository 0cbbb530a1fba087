package dev.pacer.jdkhttp.internal;

import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Where {@code PacedHttpClient#sendAsync} sends a hop whose turn has come when its delegate has no
 * executor of its own: {@value #THREADS} daemon threads of the JVM, created at the first such hop,
 * apart from every registry's round-trip executor. That executor's queue holds the reservations of
 * later turns, a blocking JDBC call each; a hop queued behind them would leave after its late
 * check, as late as they take. The threads end after {@value #IDLE_SECONDS} s idle.
 */
public final class HopSenders {

  static final int THREADS = 2;
  static final int IDLE_SECONDS = 10;

  private HopSenders() {}

  public static Executor get() {
    return Shared.POOL;
  }

  /** Starts the threads now, so that the first hop does not start one inside its turn. */
  public static void prestart() {
    Shared.POOL.prestartAllCoreThreads();
  }

  /** Created when first asked for: at the first paced hop sent asynchronously. */
  private static final class Shared {
    static final ThreadPoolExecutor POOL = pool();

    private static ThreadPoolExecutor pool() {
      AtomicInteger count = new AtomicInteger();
      ThreadPoolExecutor pool =
          new ThreadPoolExecutor(
              THREADS,
              THREADS,
              IDLE_SECONDS,
              TimeUnit.SECONDS,
              new LinkedBlockingQueue<>(),
              task -> {
                Thread t = new Thread(task, "pacer-send-" + count.incrementAndGet());
                t.setDaemon(true);
                return t;
              });
      pool.allowCoreThreadTimeOut(true);
      return pool;
    }
  }
}
