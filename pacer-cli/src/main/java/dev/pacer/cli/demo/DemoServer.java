package dev.pacer.cli.demo;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The demo's destination: a local HTTP server that enforces its own ceiling the way a real API
 * does, answering 429 to any request above it (a token bucket at the ceiling, holding at most
 * {@code burst} tokens, so well-paced traffic with some jitter passes and excess is refused). It
 * records every arrival: when, from which worker process ({@code X-Pacer-Worker}), and what it
 * answered.
 */
public final class DemoServer implements AutoCloseable {

  /** One request as the destination saw it; {@code nanos} since the server started. */
  public record Arrival(long nanos, String worker, int status) {}

  private final HttpServer server;
  private final String address;
  private final double ratePerSecond;
  private final double burst;
  private final long startNanos;
  private final List<Arrival> arrivals = new ArrayList<>();
  private double tokens;
  private long lastRefill;

  /** A destination on 127.0.0.1, its arrivals timed from now, with threads of its own. */
  public DemoServer(double ratePerSecond, double burst) throws IOException {
    this("127.0.0.1", ratePerSecond, burst, System.nanoTime(), threads(8));
  }

  /**
   * A destination listening on {@code address}, its arrivals timed from {@code startNanos} (a
   * {@link System#nanoTime()} that several destinations share, so that their arrivals line up),
   * answering on {@code executor}'s threads.
   */
  public DemoServer(String address, double ratePerSecond, double burst, long startNanos,
      Executor executor) throws IOException {
    this.address = address;
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.tokens = burst;
    this.startNanos = startNanos;
    this.lastRefill = System.nanoTime();
    server = HttpServer.create(new InetSocketAddress(address, 0), 64);
    server.setExecutor(executor);
    server.createContext("/", exchange -> {
      String worker = exchange.getRequestHeaders().getFirst("X-Pacer-Worker");
      int status = admit(worker == null ? "?" : worker);
      byte[] body = (status == 200
          ? "demo item " + exchange.getRequestURI().getPath() + "\n"
          : "429 Too Many Requests: above this destination's ceiling\n")
          .getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
  }

  private synchronized int admit(String worker) {
    long now = System.nanoTime();
    tokens = Math.min(burst, tokens + (now - lastRefill) / 1e9 * ratePerSecond);
    lastRefill = now;
    int status;
    if (tokens >= 1) {
      tokens -= 1;
      status = 200;
    } else {
      status = 429;
    }
    arrivals.add(new Arrival(now - startNanos, worker, status));
    return status;
  }

  public String baseUrl() {
    return "http://" + address + ":" + server.getAddress().getPort();
  }

  public synchronized List<Arrival> arrivals() {
    return new ArrayList<>(arrivals);
  }

  /** Daemon threads for destinations to answer on. */
  public static ExecutorService threads(int count) {
    return Executors.newFixedThreadPool(count, r -> {
      Thread t = new Thread(r, "demo-destination");
      t.setDaemon(true);
      return t;
    });
  }

  /** The most arrivals in any window [t, t + 1 s), of arrivals in time order. */
  public static int busiestOneSecond(List<Arrival> arrivals) {
    int peak = 0;
    int end = 0;
    for (int start = 0; start < arrivals.size(); start++) {
      while (end < arrivals.size()
          && arrivals.get(end).nanos() - arrivals.get(start).nanos() < 1_000_000_000L) {
        end++;
      }
      peak = Math.max(peak, end - start);
    }
    return peak;
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
