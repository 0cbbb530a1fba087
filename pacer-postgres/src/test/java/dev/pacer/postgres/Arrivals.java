package dev.pacer.postgres;

import dev.pacer.Timeline;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A local HTTP/1.1 destination that records when each request arrives ({@link System#nanoTime()}
 * as the last byte of its head is read) and answers 200 with no body: where a ceiling is judged.
 *
 * <p>Each connection has a thread of its own, blocked in a read until its next request: the
 * kernel wakes the one thread a request is for, and its instant is taken before anything else is
 * done. The JDK's {@code HttpServer}, reading every connection on one dispatcher thread and
 * answering each request before reading the next, stamped requests in bunches on a busy host.
 * Requests with a body are not supported (none of the tests sends one).
 */
final class Arrivals implements AutoCloseable {

  private final ServerSocket server;
  private final List<Long> instants = new ArrayList<>();
  private final List<String> paths = new ArrayList<>();
  private final List<Socket> connections = new ArrayList<>();

  Arrivals() throws IOException {
    server = new ServerSocket(0, 512, InetAddress.getLoopbackAddress());
    daemon("arrivals-accept", this::accept).start();
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort() + "/");
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

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket connection = server.accept();
        connection.setTcpNoDelay(true);
        synchronized (connections) {
          connections.add(connection);
        }
        daemon("arrivals", () -> serve(connection)).start();
      } catch (IOException closed) {
        return;
      }
    }
  }

  private void serve(Socket connection) {
    try (connection) {
      InputStream in = connection.getInputStream();
      OutputStream out = connection.getOutputStream();
      while (true) {
        String head = readHead(in);
        long now = System.nanoTime();
        if (head.isEmpty()) {
          return;
        }
        String path = head.split(" ", 3)[1];
        synchronized (instants) {
          instants.add(now);
          paths.add(URI.create(path).getPath());
        }
        boolean close = head.toLowerCase(Locale.ROOT).contains("\r\nconnection: close");
        out.write(("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" + (close ? "Connection: close\r\n" : "")
            + "\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        if (close) {
          return;
        }
      }
    } catch (IOException | RuntimeException gone) {
      // The client went away, or the test ended: nothing more arrives on this connection.
    }
  }

  /** A request's head, up to and with its blank line; empty if the connection ended first. */
  private static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        return "";
      }
      head.write(b);
      matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    return head.toString(StandardCharsets.US_ASCII);
  }

  private static Thread daemon(String name, Runnable task) {
    Thread t = new Thread(task, name);
    t.setDaemon(true);
    return t;
  }

  @Override
  public void close() throws IOException {
    server.close();
    synchronized (connections) {
      for (Socket c : connections) {
        c.close();
      }
    }
  }
}
