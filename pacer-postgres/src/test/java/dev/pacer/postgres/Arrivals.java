package dev.pacer.postgres;

import dev.pacer.Timeline;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * A local HTTP/1.1 destination that records when each request arrives ({@link System#nanoTime()}
 * as the last byte of its head is read) and answers 200 with no body: where a ceiling is judged.
 *
 * <p>It runs as a JVM of its own ({@link #main}), started by {@link #start()} as the fleet tests
 * start their workers (the same {@code java}, the test's class path, a {@code READY} line on
 * stdout), so that a pause of the JVM that sends the requests (a collection, a safepoint) cannot
 * also hold the stamps of requests already sent. {@code System.nanoTime()} is the machine's
 * monotonic clock on Linux, so the door's instants compare with the sender's.
 *
 * <p>Each connection has a thread of its own, blocked in a read until its next request: the
 * kernel wakes the one thread a request is for, and its instant is taken before anything else is
 * done. The JDK's {@code HttpServer}, reading every connection on one dispatcher thread and
 * answering each request before reading the next, stamped requests in bunches on a busy host.
 * Requests with a body are not supported (none of the tests sends one).
 *
 * <p>The child's protocol: it prints {@code READY <port>}; each {@code REPORT} line on its stdin
 * is answered with one {@code ARRIVAL <nanos> opened|kept <request target>} line per arrival so far and
 * {@code END}; it exits when its stdin closes.
 */
final class Arrivals implements AutoCloseable {

  /**
   * One request as the door saw it: when, the request target (path and query) it named, and
   * whether it was the first on its connection (whose accept and thread start it waited for).
   */
  record Arrival(long nanos, String target, boolean opened) {
    String path() {
      return URI.create(target).getPath();
    }
  }

  private final Process child;
  private final BufferedReader out;
  private final Writer in;
  private final Path log;
  private final URI uri;

  private Arrivals(Process child, Path log) throws IOException {
    this.child = child;
    this.log = log;
    this.out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
    this.in = new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8);
    String ready = out.readLine();
    if (ready == null || !ready.startsWith("READY ")) {
      child.destroyForcibly();
      throw new IOException("the door did not start (" + ready + "): " + Files.readString(log));
    }
    this.uri = URI.create("http://127.0.0.1:" + ready.substring(6) + "/");
  }

  /**
   * Starts the door's JVM and waits until it listens.
   *
   * <p>The door stands for a destination on a machine of its own, whose stamps the sender's load
   * cannot delay. Sharing two cores with the sender, PostgreSQL and the build, its thread was
   * measured waiting runnable 6 to 12 ms behind other threads before it could read a request
   * already sent (read from {@code /proc/thread-self/schedstat} beside each stamp): at 100/s,
   * requests 10 ms apart, that alone put 102 into one second. So where the system allows it (as
   * root, which CI is), the door runs under the real-time FIFO policy, which gives it a CPU the
   * moment a request wakes it; elsewhere it runs at the ordinary policy and says so on stderr.
   */
  static Arrivals start() throws IOException {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    Path log = Files.createTempFile("arrivals", ".log");
    List<String> command = new ArrayList<>();
    if (REAL_TIME_ALLOWED) {
      command.addAll(List.of("chrt", "--fifo", "10"));
    } else {
      System.err.println("the door runs at the ordinary scheduling policy (chrt --fifo was not"
          + " allowed): on a busy machine its stamps can lag the requests");
    }
    command.addAll(List.of(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
        System.getProperty("java.class.path"), Arrivals.class.getName()));
    Process child = new ProcessBuilder(command).redirectError(log.toFile()).start();
    return new Arrivals(child, log);
  }

  private static final boolean REAL_TIME_ALLOWED = realTimeAllowed();

  /** Whether {@code chrt --fifo} can start a process here: it needs root or CAP_SYS_NICE. */
  private static boolean realTimeAllowed() {
    try {
      Process probe = new ProcessBuilder("chrt", "--fifo", "10", "true")
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      return probe.waitFor(10, TimeUnit.SECONDS) && probe.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  URI uri() {
    return uri;
  }

  /** Every arrival so far, in the order the door recorded them. */
  List<Arrival> arrivals() throws IOException {
    in.write("REPORT\n");
    in.flush();
    List<Arrival> all = new ArrayList<>();
    String line;
    while ((line = out.readLine()) != null && !line.equals("END")) {
      String[] parts = line.split(" ", 4);
      all.add(new Arrival(Long.parseLong(parts[1]), parts[3], parts[2].equals("opened")));
    }
    if (line == null) {
      throw new IOException("the door's JVM ended mid-report: " + Files.readString(log));
    }
    return all;
  }

  /** The arrivals so far. */
  Timeline timeline() throws IOException {
    return new Timeline(arrivals().stream().map(Arrival::nanos).toList());
  }

  /** The arrivals so far, but for those of {@code path} (a warm-up request's, say). */
  Timeline timelineWithout(String path) throws IOException {
    return new Timeline(arrivals().stream().filter(a -> !a.path().equals(path))
        .map(Arrival::nanos).toList());
  }

  @Override
  public void close() throws IOException {
    try {
      in.close();
      if (!child.waitFor(10, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    } catch (InterruptedException e) {
      child.destroyForcibly();
      Thread.currentThread().interrupt();
    } finally {
      Files.deleteIfExists(log);
    }
  }

  /** The door itself, in its own JVM: see the class comment for its protocol. */
  public static void main(String[] args) throws IOException {
    try (Server server = new Server()) {
      System.out.println("READY " + server.port());
      System.out.flush();
      BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String command;
      while ((command = commands.readLine()) != null) {
        if (!command.equals("REPORT")) {
          throw new IllegalArgumentException("unknown command: " + command);
        }
        StringBuilder report = new StringBuilder();
        for (Arrival a : server.arrivals()) {
          report.append("ARRIVAL ").append(a.nanos()).append(a.opened() ? " opened " : " kept ")
              .append(a.target()).append('\n');
        }
        System.out.print(report.append("END\n"));
        System.out.flush();
      }
    }
  }

  /** The listening socket and a thread per connection. */
  private static final class Server implements AutoCloseable {
    private final ServerSocket server;
    private final List<Arrival> arrivals = new ArrayList<>();
    private final List<Socket> connections = new ArrayList<>();

    Server() throws IOException {
      server = new ServerSocket(0, 512, InetAddress.getLoopbackAddress());
      daemon("arrivals-accept", this::accept).start();
    }

    int port() {
      return server.getLocalPort();
    }

    List<Arrival> arrivals() {
      synchronized (arrivals) {
        return new ArrayList<>(arrivals);
      }
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
        boolean first = true;
        while (true) {
          String head = readHead(in);
          long now = System.nanoTime();
          if (head.isEmpty()) {
            return;
          }
          String target = head.split(" ", 3)[1];
          synchronized (arrivals) {
            arrivals.add(new Arrival(now, target, first));
          }
          first = false;
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
}
