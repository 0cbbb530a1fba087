package dev.pacer.spring;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.ArrivalClock;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.IntUnaryOperator;

/**
 * A local HTTP destination that records when each request arrived (the ceiling is judged where
 * requests arrive) and answers what the test's rule says for the n-th request (200 by default), a
 * 429 with {@code Retry-After} on demand.
 */
final class ArrivalCounter implements AutoCloseable {

  private final HttpServer server;
  /**
   * Started in full before the first request: a handler thread created on demand would stamp its
   * first arrival late, by however long the JVM takes to start a thread on a busy host.
   */
  private final ThreadPoolExecutor executor = new ThreadPoolExecutor(16, 16, 0,
      TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
        Thread t = new Thread(r, "arrival-counter");
        t.setDaemon(true);
        return t;
      });
  private final List<Long> arrivals = new ArrayList<>();
  private volatile IntUnaryOperator rule = n -> 200;
  private volatile String retryAfter;

  ArrivalCounter() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
    executor.prestartAllCoreThreads();
    ArrivalClock clock = new ArrivalClock(executor);
    server.setExecutor(clock);
    server.createContext("/", exchange -> {
      long now = clock.arrivedAt();
      int n;
      synchronized (arrivals) {
        arrivals.add(now);
        n = arrivals.size();
      }
      int status = rule.applyAsInt(n);
      if (status == 429 && retryAfter != null) {
        exchange.getResponseHeaders().add("Retry-After", retryAfter);
      }
      byte[] body = ("answer " + n).getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
  }

  /** Answers {@code rule(n)} to the n-th request (counting from 1) from now on. */
  ArrivalCounter answering(IntUnaryOperator rule, String retryAfter) {
    this.rule = rule;
    this.retryAfter = retryAfter;
    return this;
  }

  String url(String path) {
    return "http://127.0.0.1:" + server.getAddress().getPort() + path;
  }

  int count() {
    synchronized (arrivals) {
      return arrivals.size();
    }
  }

  /** The arrivals but the first. */
  Timeline timelineAfterFirst() {
    synchronized (arrivals) {
      return new Timeline(arrivals.subList(1, arrivals.size()));
    }
  }

  Timeline timeline() {
    synchronized (arrivals) {
      return new Timeline(arrivals);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
