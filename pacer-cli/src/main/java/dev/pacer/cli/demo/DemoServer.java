package dev.pacer.cli.demo;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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
  private final double ratePerSecond;
  private final double burst;
  private final long startNanos = System.nanoTime();
  private final List<Arrival> arrivals = new ArrayList<>();
  private double tokens;
  private long lastRefill = startNanos;

  public DemoServer(double ratePerSecond, double burst) throws IOException {
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.tokens = burst;
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
    server.setExecutor(Executors.newFixedThreadPool(8, r -> {
      Thread t = new Thread(r, "demo-destination");
      t.setDaemon(true);
      return t;
    }));
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
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  public synchronized List<Arrival> arrivals() {
    return new ArrayList<>(arrivals);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
