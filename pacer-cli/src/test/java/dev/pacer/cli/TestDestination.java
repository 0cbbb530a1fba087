package dev.pacer.cli;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.Timeline;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * A local HTTP destination for end-to-end tests: records every arrival (when, which path, which
 * worker, what it answered) and answers what the test's rule says for (path, attempt number of
 * that path, starting at 1): 200 by default, or 429, 503, 403, 500 on demand.
 */
final class TestDestination implements AutoCloseable {

  record Arrival(long nanos, String path, String worker, int status) {}

  private final HttpServer server;
  private final List<Arrival> arrivals = new ArrayList<>();
  private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
  private volatile BiFunction<String, Integer, Integer> rule = (path, attempt) -> 200;

  TestDestination() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
    server.setExecutor(Executors.newFixedThreadPool(16, r -> {
      Thread t = new Thread(r, "test-destination");
      t.setDaemon(true);
      return t;
    }));
    server.createContext("/", exchange -> {
      long now = System.nanoTime();
      String path = exchange.getRequestURI().getPath();
      int attempt = attempts.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
      int status = rule.apply(path, attempt);
      synchronized (arrivals) {
        arrivals.add(new Arrival(now, path,
            exchange.getRequestHeaders().getFirst("X-Pacer-Worker"), status));
      }
      byte[] body = ("body of " + path).getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
  }

  /** Answers {@code rule(path, attempt)} from now on. */
  TestDestination answering(BiFunction<String, Integer, Integer> rule) {
    this.rule = rule;
    return this;
  }

  String url(String path) {
    return "http://127.0.0.1:" + server.getAddress().getPort() + path;
  }

  /** {@code count} URLs: /item/1 .. /item/count. */
  List<String> items(int count) {
    List<String> urls = new ArrayList<>();
    for (int i = 1; i <= count; i++) {
      urls.add(url("/item/" + i));
    }
    return urls;
  }

  List<Arrival> arrivals() {
    synchronized (arrivals) {
      return new ArrayList<>(arrivals);
    }
  }

  /** The arrivals as a timeline: the figures the fleet bounds are stated in. */
  static Timeline timeline(List<Arrival> arrivals) {
    return new Timeline(arrivals.stream().map(Arrival::nanos).toList());
  }

  long count(int status) {
    return arrivals().stream().filter(a -> a.status() == status).count();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
