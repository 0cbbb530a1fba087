package dev.pacer.examples;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.ArrivalClock;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;

/**
 * A destination on loopback that records when each request arrived, and answers 200 unless a path
 * was given another status (and headers).
 */
final class LocalDestination implements AutoCloseable {

  private record Scripted(int status, Map<String, String> headers) {}

  private final HttpServer server;
  private final List<Long> arrivals = new ArrayList<>();
  private final Map<String, Scripted> scripted = new ConcurrentHashMap<>();

  LocalDestination() {
    try {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ArrivalClock clock = new ArrivalClock(Executors.newCachedThreadPool());
    server.setExecutor(clock);
    server.createContext("/", exchange -> {
      synchronized (arrivals) {
        arrivals.add(clock.arrivedAt());
      }
      Scripted answer = scripted.getOrDefault(exchange.getRequestURI().getPath(),
          new Scripted(200, Map.of()));
      answer.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
      byte[] body = "ok".getBytes();
      exchange.sendResponseHeaders(answer.status(), body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
  }

  void answer(String path, int status, Map<String, String> headers) {
    scripted.put(path, new Scripted(status, headers));
  }

  URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
  }

  int arrivals() {
    synchronized (arrivals) {
      return arrivals.size();
    }
  }

  /** Seconds from the first arrival to the last. */
  double span() {
    synchronized (arrivals) {
      return arrivals.isEmpty() ? 0
          : (arrivals.get(arrivals.size() - 1) - arrivals.get(0)) / 1e9;
    }
  }

  /** The most requests that arrived within any 1 s, from the very first. */
  int busiestSecond() {
    List<Long> sorted;
    synchronized (arrivals) {
      sorted = new ArrayList<>(arrivals);
    }
    sorted.sort(null);
    int most = 0;
    int start = 0;
    for (int end = 0; end < sorted.size(); end++) {
      while (sorted.get(end) - sorted.get(start) >= 1_000_000_000L) {
        start++;
      }
      most = Math.max(most, end - start + 1);
    }
    return most;
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
