package dev.pacer.cli.demo;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The demo's destination: a local HTTP server that enforces its own ceiling the way a real API
 * does, answering 429 to any request above it (a token bucket at the ceiling, holding at most
 * {@code burst} tokens, so well-paced traffic with some jitter passes and excess is refused). It
 * records every arrival: when, from which worker process ({@code X-Pacer-Worker}), and what it
 * answered; {@link #writeCsv} writes them out, for the demo's figures to be checked.
 *
 * <p>An arrival is timed when the server's dispatcher thread hands the exchange over to a handler
 * thread, not when a handler thread gets to run: that hop is the server's own delay, and on a busy
 * machine it can exceed an interval. The bucket is refilled to that instant too, so a request is
 * not refused for the time it waited for a handler.
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

  /** The instant the dispatcher handed over the exchange the calling handler thread serves. */
  private final ThreadLocal<Long> dispatched = new ThreadLocal<>();

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
  public DemoServer(
      String address, double ratePerSecond, double burst, long startNanos, Executor executor)
      throws IOException {
    this.address = address;
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.tokens = burst;
    this.startNanos = startNanos;
    this.lastRefill = System.nanoTime();
    server = HttpServer.create(new InetSocketAddress(address, 0), 64);
    server.setExecutor(
        exchange -> {
          long seen = System.nanoTime();
          executor.execute(
              () -> {
                dispatched.set(seen);
                try {
                  exchange.run();
                } finally {
                  dispatched.remove();
                }
              });
        });
    server.createContext(
        "/",
        exchange -> {
          String worker = exchange.getRequestHeaders().getFirst("X-Pacer-Worker");
          int status = admit(worker == null ? "?" : worker, dispatched.get());
          byte[] body =
              (status == 200
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

  /** Takes a token for a request that arrived at {@code now}, if there is one: 200, else 429. */
  private synchronized int admit(String worker, long now) {
    // Handler threads may get here out of their arrivals' order: the bucket never runs backwards.
    if (now - lastRefill > 0) {
      tokens = Math.min(burst, tokens + (now - lastRefill) / 1e9 * ratePerSecond);
      lastRefill = now;
    }
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

  public String address() {
    return address;
  }

  /** Every arrival so far, in time order. */
  public synchronized List<Arrival> arrivals() {
    List<Arrival> sorted = new ArrayList<>(arrivals);
    sorted.sort(Comparator.comparingLong(Arrival::nanos));
    return sorted;
  }

  /**
   * Writes the arrivals of {@code servers}, which share their start, to {@code csv}: a header, then
   * one line per arrival, {@code host,nanos,worker,status}, in time order ({@code nanos} since the
   * servers started).
   */
  public static void writeCsv(List<DemoServer> servers, Path csv) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add("host,nanos,worker,status");
    servers.stream()
        .flatMap(s -> s.arrivals().stream().map(a -> Map.entry(s.address(), a)))
        .sorted(Comparator.comparingLong(e -> e.getValue().nanos()))
        .forEach(
            e ->
                lines.add(
                    e.getKey()
                        + ","
                        + e.getValue().nanos()
                        + ","
                        + e.getValue().worker()
                        + ","
                        + e.getValue().status()));
    Files.createDirectories(csv.toAbsolutePath().getParent());
    Files.write(csv, lines, StandardCharsets.UTF_8);
  }

  /** Daemon threads for destinations to answer on. */
  public static ExecutorService threads(int count) {
    return Executors.newFixedThreadPool(
        count,
        r -> {
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
