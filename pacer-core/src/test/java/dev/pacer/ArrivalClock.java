package dev.pacer;

import com.sun.net.httpserver.HttpServer;
import java.util.concurrent.Executor;

/**
 * When each request reached a test destination ({@link HttpServer}), read as early as the server
 * lets a test see it: the instant its dispatcher thread hands the exchange to the handlers'
 * executor, not the instant a handler thread gets to run.
 *
 * <p>Why: every fleet test judges the ceiling from these instants, and a bound of the ceiling + 1
 * leaves room for one request to stray from its turn by less than one interval. The hop from the
 * dispatcher to a handler thread is the test server's own delay, not the fleet's, and on a busy
 * machine it can exceed an interval (figures in docs/reliability.md, the door's item 7).
 * The dispatcher stamps every request, those on a kept-alive connection included (it hands each
 * one to the executor when the connection turns readable).
 *
 * <pre>{@code
 * ArrivalClock clock = new ArrivalClock(Executors.newFixedThreadPool(32));
 * server.setExecutor(clock);
 * server.createContext("/", exchange -> arrivals.add(clock.arrivedAt()));
 * }</pre>
 */
public final class ArrivalClock implements Executor {

  private final Executor handlers;
  private final ThreadLocal<Long> dispatched = new ThreadLocal<>();

  /**
   * A clock that runs each exchange on {@code handlers}.
   *
   * @param handlers where the server's handlers run
   */
  public ArrivalClock(Executor handlers) {
    this.handlers = handlers;
  }

  @Override
  public void execute(Runnable exchange) {
    long seen = System.nanoTime();
    handlers.execute(() -> {
      dispatched.set(seen);
      try {
        exchange.run();
      } finally {
        dispatched.remove();
      }
    });
  }

  /**
   * When the request the calling handler serves was handed over by the dispatcher, on {@link
   * System#nanoTime()}.
   *
   * @return the arrival instant
   * @throws IllegalStateException if called outside an exchange this clock ran
   */
  public long arrivedAt() {
    Long seen = dispatched.get();
    if (seen == null) {
      throw new IllegalStateException("not in an exchange run by this ArrivalClock: set it as the"
          + " server's executor");
    }
    return seen;
  }
}
