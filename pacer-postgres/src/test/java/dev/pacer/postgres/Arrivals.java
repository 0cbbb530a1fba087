package dev.pacer.postgres;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.Timeline;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * A local HTTP destination that records when each request arrives (its handler's first instant,
 * {@link System#nanoTime()}) and answers 200 with an empty body: where a ceiling is judged. It
 * answers on its dispatcher thread, one request at a time, which a request that asks for nothing
 * allows.
 */
final class Arrivals implements AutoCloseable {

  private final HttpServer server;
  private final List<Long> instants = new ArrayList<>();
  private final List<String> paths = new ArrayList<>();

  Arrivals() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 512);
    // No executor: the handler runs on the server's one dispatcher thread as soon as a request
    // is read, with no hand-over to a pool whose delay would blur the instants on a busy host.
    server.setExecutor(null);
    server.createContext("/", exchange -> {
      long now = System.nanoTime();
      synchronized (instants) {
        instants.add(now);
        paths.add(exchange.getRequestURI().getPath());
      }
      exchange.getRequestBody().readAllBytes();
      exchange.sendResponseHeaders(200, -1);
      try (OutputStream ignored = exchange.getResponseBody()) {
        // no body
      }
    });
    server.start();
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
  }

  /** The arrivals so far. */
  Timeline timeline() {
    synchronized (instants) {
      return new Timeline(instants);
    }
  }

  /** The arrivals so far, but for those of {@code path} (a warm-up request's, say). */
  Timeline timelineWithout(String path) {
    List<Long> kept = new ArrayList<>();
    synchronized (instants) {
      for (int i = 0; i < instants.size(); i++) {
        if (!paths.get(i).equals(path)) {
          kept.add(instants.get(i));
        }
      }
    }
    return new Timeline(kept);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
