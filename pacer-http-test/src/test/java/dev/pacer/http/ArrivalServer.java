package dev.pacer.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.pacer.ArrivalClock;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A local destination that records when each request arrives (System.nanoTime), which is where a
 * ceiling is judged. Paths:
 *
 * <ul>
 *   <li>{@code /ok/NAME}: 200 with a small body;
 *   <li>{@code /hop/K}: 302 to {@code /hop/K-1} (a relative Location); {@code /hop/0}: 200 "landed";
 *   <li>{@code /status/S}: status S; {@code /status/S/A}: status S with {@code Retry-After: A};
 *   <li>{@code /redirect/S?to=URL}: status S with {@code Location: URL} ({@link #redirect}).
 * </ul>
 */
final class ArrivalServer implements AutoCloseable {

  /** One request as it arrived: its headers by lower-case name, and its body. */
  record Arrival(long nanos, String method, String path, Map<String, List<String>> headers,
      String body) {}

  private final HttpServer server;
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private final ArrivalClock clock = new ArrivalClock(threads);
  private final ConcurrentLinkedQueue<Arrival> arrivals = new ConcurrentLinkedQueue<>();

  ArrivalServer() throws IOException {
    this("127.0.0.1");
  }

  /** A destination listening on {@code address}, a loopback one (127.0.0.2 is one too). */
  ArrivalServer(String address) throws IOException {
    server = HttpServer.create(new InetSocketAddress(address, 0), 64);
    server.setExecutor(clock);
    server.createContext("/", this::answer);
    server.start();
  }

  private void answer(HttpExchange exchange) throws IOException {
    long now = clock.arrivedAt();
    String path = exchange.getRequestURI().getPath();
    String received = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    Map<String, List<String>> headers = new TreeMap<>();
    exchange.getRequestHeaders().forEach((name, values) ->
        headers.put(name.toLowerCase(Locale.ROOT), List.copyOf(values)));
    arrivals.add(new Arrival(now, exchange.getRequestMethod(), path, headers, received));
    int status = 200;
    String body = "ok " + path;
    String[] parts = path.split("/");
    String query = exchange.getRequestURI().getRawQuery();
    if (path.startsWith("/redirect/") && query != null && query.startsWith("to=")) {
      status = Integer.parseInt(parts[2]);
      exchange.getResponseHeaders().add("Location",
          URLDecoder.decode(query.substring("to=".length()), StandardCharsets.UTF_8));
      body = "moved";
    } else if (path.startsWith("/hop/")) {
      int k = Integer.parseInt(parts[2]);
      if (k > 0) {
        status = 302;
        exchange.getResponseHeaders().add("Location", "/hop/" + (k - 1));
        body = "moved";
      } else {
        body = "landed";
      }
    } else if (path.startsWith("/status/")) {
      status = Integer.parseInt(parts[2]);
      if (parts.length > 3) {
        exchange.getResponseHeaders().add("Retry-After", parts[3]);
      }
      body = "status " + status;
    }
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  URI uri(String path) {
    return URI.create("http://" + server.getAddress().getAddress().getHostAddress() + ":"
        + server.getAddress().getPort() + path);
  }

  /** The path on this server that answers {@code status} with {@code Location: location}. */
  URI redirect(int status, String location) {
    return uri("/redirect/" + status + "?to=" + URLEncoder.encode(location, StandardCharsets.UTF_8));
  }

  List<Arrival> arrivals() {
    return new ArrayList<>(arrivals);
  }

  List<String> paths() {
    return arrivals().stream().map(Arrival::path).toList();
  }

  @Override
  public void close() {
    server.stop(0);
    threads.shutdownNow();
  }
}
