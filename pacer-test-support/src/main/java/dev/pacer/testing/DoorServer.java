package dev.pacer.testing;

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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;

/**
 * A local HTTP/1.1 destination that stamps each request where it arrives: {@link System#nanoTime()}
 * as the last byte of its head is read from the socket, before anything else is done with it. Every
 * fleet test judges the ceiling from these stamps.
 *
 * <p>Each connection has a thread of its own, blocked in a read until its next request, so the
 * kernel wakes the one thread a request is for and no hand-over between threads stands between the
 * bytes and the stamp. A server that reads every connection on one dispatcher thread and answers
 * each request before reading the next (the JDK's {@code HttpServer}) stamps requests in bunches on
 * a busy host, late by the time its dispatcher waits for a CPU.
 *
 * <p>Where the system allows it, the thread that accepts connections moves itself to the real-time
 * policy ({@link RealTime}) before it accepts any, and each connection's thread inherits it: on a
 * busy host the kernel then runs the thread a request wakes at once, not after the senders' threads
 * that share its cores.
 *
 * <p>This is the door in the test's own JVM, answering what {@code answers} says for each request:
 * for tests whose answers follow the run (a count of attempts, a switch), and whose senders are
 * other JVMs. A test whose senders share its JVM uses {@link Door}, the same server in a JVM of its
 * own. Heads are read up to {@value #MAX_HEAD_BYTES} bytes and bodies (with a Content-Length;
 * chunked bodies are refused with 411) up to {@value #MAX_BODY_BYTES}.
 */
public final class DoorServer implements AutoCloseable {

  static final int MAX_HEAD_BYTES = 64 * 1024;
  static final int MAX_BODY_BYTES = 1024 * 1024;

  private final ServerSocket server;
  private final Function<Request, Answer> answers;
  private final List<Arrival> arrivals = new ArrayList<>();
  private final List<Socket> connections = new ArrayList<>();

  /** A door on an ephemeral port of 127.0.0.1 answering {@code answers}. */
  public DoorServer(Function<Request, Answer> answers) throws IOException {
    this(InetAddress.getLoopbackAddress(), answers);
  }

  /** A door on an ephemeral port of {@code address} (127.0.0.2 is a loopback one too). */
  public DoorServer(InetAddress address, Function<Request, Answer> answers) throws IOException {
    // Its stamps are judged at the stalls this JVM meets while it serves (FleetBounds): sampled
    // from now on, not from the first judgement after a run.
    JvmStalls.get();
    this.answers = answers;
    this.server = new ServerSocket(0, 512, address);
    CompletableFuture<Void> policy = new CompletableFuture<>();
    daemon(
            "door-accept",
            () -> {
              try {
                if (RealTime.allowed()) {
                  RealTime.moveThisThread();
                }
                policy.complete(null);
              } catch (IOException | RuntimeException e) {
                policy.completeExceptionally(e);
                return;
              }
              accept();
            })
        .start();
    try {
      policy.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      server.close();
      throw new IOException("interrupted while the door's threads moved to the real-time policy");
    } catch (ExecutionException e) {
      server.close();
      throw new IOException("the door's threads could not move to the real-time policy", e);
    }
  }

  /**
   * Whether the threads that read and stamp requests run at the real-time policy ({@link
   * RealTime}): where the system allows it, they always do.
   */
  public static boolean realTime() {
    return RealTime.allowed();
  }

  public int port() {
    return server.getLocalPort();
  }

  /** {@code http://address:port/}. */
  public URI uri() {
    String host = server.getInetAddress().getHostAddress();
    return URI.create("http://" + host + ":" + port() + "/");
  }

  /** {@code http://address:port} + {@code path}. */
  public String url(String path) {
    return uri().resolve(path).toString();
  }

  /** Every arrival so far, in the order they were stamped. */
  public List<Arrival> arrivals() {
    synchronized (arrivals) {
      return new ArrayList<>(arrivals);
    }
  }

  /** The arrivals so far as a timeline. */
  public Timeline timeline() {
    return Timeline.of(arrivals());
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket connection = server.accept();
        connection.setTcpNoDelay(true);
        synchronized (connections) {
          connections.add(connection);
        }
        daemon("door", () -> serve(connection)).start();
      } catch (IOException closed) {
        return;
      }
    }
  }

  private void serve(Socket connection) {
    try (connection) {
      InputStream in = new java.io.BufferedInputStream(connection.getInputStream());
      OutputStream out = connection.getOutputStream();
      boolean first = true;
      while (true) {
        String head = readHead(in);
        long now = System.nanoTime();
        if (head.isEmpty()) {
          return;
        }
        Request request = parse(head, in);
        Answer answer = request == null ? Answer.status(411) : answers.apply(request);
        if (request == null) {
          request = new Request("?", "/", Map.of(), new byte[0]);
        }
        synchronized (arrivals) {
          arrivals.add(new Arrival(now, request, first, answer.status()));
        }
        first = false;
        boolean close =
            "close".equalsIgnoreCase(request.header("Connection")) || answer.status() == 411;
        write(out, answer, close, request.method().equals("HEAD"));
        if (close) {
          return;
        }
      }
    } catch (IOException | RuntimeException gone) {
      // The client went away, or the test ended: nothing more arrives on this connection.
    }
  }

  private static void write(OutputStream out, Answer answer, boolean close, boolean head)
      throws IOException {
    StringBuilder h =
        new StringBuilder("HTTP/1.1 ")
            .append(answer.status())
            .append(' ')
            .append(reason(answer.status()))
            .append("\r\n");
    boolean noBody = answer.status() == 204 || answer.status() == 304 || answer.status() < 200;
    if (!noBody) {
      h.append("Content-Length: ").append(answer.body().length).append("\r\n");
    }
    answer.headers().forEach((k, v) -> h.append(k).append(": ").append(v).append("\r\n"));
    if (close) {
      h.append("Connection: close\r\n");
    }
    out.write(h.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
    if (!noBody && !head) {
      out.write(answer.body());
    }
    out.flush();
  }

  private static String reason(int status) {
    return switch (status) {
      case 200 -> "OK";
      case 301 -> "Moved Permanently";
      case 302 -> "Found";
      case 403 -> "Forbidden";
      case 404 -> "Not Found";
      case 429 -> "Too Many Requests";
      case 500 -> "Internal Server Error";
      case 503 -> "Service Unavailable";
      default -> "Status";
    };
  }

  /** The request whose head is {@code head}, its body read from {@code in}; null if chunked. */
  private static Request parse(String head, InputStream in) throws IOException {
    String[] lines = head.split("\r\n");
    String[] requestLine = lines[0].split(" ", 3);
    if (requestLine.length < 2) {
      throw new IOException("not a request line: " + lines[0]);
    }
    Map<String, List<String>> headers = new LinkedHashMap<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      if (colon > 0) {
        headers
            .computeIfAbsent(
                lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
                k -> new ArrayList<>())
            .add(lines[i].substring(colon + 1).trim());
      }
    }
    if (headers.containsKey("transfer-encoding")) {
      return null;
    }
    List<String> length = headers.get("content-length");
    int size = length == null ? 0 : Integer.parseInt(length.get(0));
    if (size < 0 || size > MAX_BODY_BYTES) {
      throw new IOException("a body of " + size + " bytes, above the door's " + MAX_BODY_BYTES);
    }
    byte[] body = in.readNBytes(size);
    if (body.length < size) {
      throw new IOException("the body ended after " + body.length + " of " + size + " bytes");
    }
    return new Request(requestLine[0], requestLine[1], headers, body);
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
      if (head.size() == MAX_HEAD_BYTES) {
        throw new IOException("a request head above " + MAX_HEAD_BYTES + " bytes");
      }
      head.write(b);
      matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    return head.toString(StandardCharsets.ISO_8859_1);
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
