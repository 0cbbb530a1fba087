package dev.pacer.bench;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The destination of {@link FetchThroughput}, in a JVM of its own: every path answers 200 with
 * {@code BYTES} bytes, on {@code THREADS} handler threads. Prints its port, then serves until its
 * standard input closes (its parent ended it, or died).
 *
 * <p>Its connections run with {@code TCP_NODELAY}: the JDK's server writes an answer's headers and
 * its body separately, and without it the body waits for the client's acknowledgement of the
 * headers, which Linux delays by up to 40 ms: both loops would measure that wait, not their own
 * work. The property is read once per JVM, at its first server, so this server has a JVM to itself.
 *
 * <p>Usage: {@code LocalDestination THREADS BYTES}, with {@code -Dsun.net.httpserver.nodelay=true}.
 */
public final class LocalDestination {

  private LocalDestination() {}

  public static void main(String[] args) throws IOException {
    if (!Boolean.getBoolean("sun.net.httpserver.nodelay")) {
      throw new IllegalStateException("run with -Dsun.net.httpserver.nodelay=true");
    }
    int threads = Integer.parseInt(args[0]);
    byte[] body = new byte[Integer.parseInt(args[1])];
    Arrays.fill(body, (byte) 'x');
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 1024);
    ExecutorService handlers = Executors.newFixedThreadPool(threads);
    server.setExecutor(handlers);
    server.createContext(
        "/",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    server.start();
    System.out.println(server.getAddress().getPort());
    System.out.flush();
    try {
      while (System.in.read() != -1) {
        // Nothing is sent: the end of the input is the signal to stop.
      }
    } finally {
      server.stop(0);
      handlers.shutdownNow();
    }
  }
}
