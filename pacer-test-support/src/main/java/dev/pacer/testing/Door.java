package dev.pacer.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The door in a JVM of its own: a {@link DoorServer} answering {@link Answer#byPath}, started as a
 * child process (the same {@code java}, the test's class path), so that a pause of the JVM that
 * sends the requests (a collection, a safepoint) cannot also hold the stamps of requests already
 * sent. {@code System.nanoTime()} is the machine's monotonic clock on Linux, so the door's instants
 * compare with the sender's.
 *
 * <p>The door stands for a destination on a machine of its own, whose stamps the sender's load
 * cannot delay. Sharing a few cores with the senders, PostgreSQL and the build, an ordinary thread
 * can wait runnable for milliseconds before it reads a request already sent, and at 100/s, with
 * requests 10 ms apart, such a wait alone puts one request too many into a second. So where the
 * system allows it (as root, or with CAP_SYS_NICE) the door's threads run under the real-time FIFO
 * policy, which gives them a CPU the moment a request wakes them (its JVM's other threads do not:
 * {@link #keepRealTimeForTheDoorsThreads}). Where it does not, {@link #realTime()} says so and
 * {@link FleetBounds} reports a broken upper bound as a skip naming that cause rather than as the
 * fleet's fault.
 *
 * <p>The child's protocol: it prints {@code READY <port>}; each {@code REPORT} line on its stdin is
 * answered with one {@code ARRIVAL <nanos> opened|kept <status> <worker|-> <method> <target>} line
 * per arrival so far and {@code END}; it exits when its stdin closes.
 */
public final class Door implements AutoCloseable {

  private static final boolean REAL_TIME_ALLOWED = RealTime.allowed();

  /** Tells the door's JVM it was started at the real-time policy. */
  private static final String REAL_TIME_PROPERTY = "pacer.door.realTime";

  private final Process child;
  private final BufferedReader out;
  private final Writer in;
  private final Path log;
  private final URI uri;

  private Door(Process child, Path log) throws IOException {
    this.child = child;
    this.log = log;
    this.out =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
    this.in = new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8);
    String ready = out.readLine();
    if (ready == null || !ready.startsWith("READY ")) {
      child.destroyForcibly();
      throw new IOException("the door did not start (" + ready + "): " + Files.readString(log));
    }
    this.uri = URI.create("http://127.0.0.1:" + ready.substring(6) + "/");
  }

  /** Starts the door's JVM, at the real-time policy where allowed, and waits until it listens. */
  public static Door start() throws IOException {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    Path log = Files.createTempFile("door", ".log");
    List<String> command = new ArrayList<>();
    if (REAL_TIME_ALLOWED) {
      command.addAll(List.of("chrt", "--fifo", RealTime.PRIORITY));
    }
    command.addAll(
        List.of(
            java,
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-D" + REAL_TIME_PROPERTY + "=" + REAL_TIME_ALLOWED,
            "-cp",
            System.getProperty("java.class.path"),
            Door.class.getName()));
    Process child = new ProcessBuilder(command).redirectError(log.toFile()).start();
    return new Door(child, log);
  }

  /** Whether the door runs at the real-time policy, as a destination of its own machine would. */
  public boolean realTime() {
    return REAL_TIME_ALLOWED;
  }

  public URI uri() {
    return uri;
  }

  /** The door JVM's process id. */
  public long pid() {
    return child.pid();
  }

  /** {@link #uri()} resolved against {@code path}. */
  public String url(String path) {
    return uri.resolve(path).toString();
  }

  /** Every arrival so far, in the order the door stamped them. */
  public List<Arrival> arrivals() throws IOException {
    in.write("REPORT\n");
    in.flush();
    List<Arrival> all = new ArrayList<>();
    String line;
    while ((line = out.readLine()) != null && !line.equals("END")) {
      String[] parts = line.split(" ", 7);
      Map<String, List<String>> headers =
          parts[4].equals("-")
              ? Map.of()
              : Map.of(Arrival.WORKER_HEADER.toLowerCase(java.util.Locale.ROOT), List.of(parts[4]));
      all.add(
          new Arrival(
              Long.parseLong(parts[1]),
              new Request(parts[5], parts[6], headers, new byte[0]),
              parts[2].equals("opened"),
              Integer.parseInt(parts[3])));
    }
    if (line == null) {
      throw new IOException("the door's JVM ended mid-report: " + Files.readString(log));
    }
    return all;
  }

  /** The arrivals so far. */
  public Timeline timeline() throws IOException {
    return Timeline.of(arrivals());
  }

  /** The arrivals so far, but for those of {@code path} (a warm-up request's, say). */
  public Timeline timelineWithout(String path) throws IOException {
    return Timeline.of(arrivals().stream().filter(a -> !a.path().equals(path)).toList());
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

  /**
   * Started under {@code chrt --fifo}, every thread of this JVM runs at the real-time policy, its
   * JIT compiler's too: a compile then holds a core from every ordinary thread of the machine, and
   * from the door's own threads queued behind it at the same priority, until it ends. Only the
   * threads that read and stamp requests ({@code door-accept}, and the {@code door} threads it
   * starts, which inherit its policy) and the VM thread (which stops every thread at a safepoint
   * and restarts them) keep it; the rest, and the threads they start later, go back to the ordinary
   * policy.
   */
  private static void keepRealTimeForTheDoorsThreads() throws IOException, InterruptedException {
    try (java.nio.file.DirectoryStream<Path> tasks =
        Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
      for (Path task : tasks) {
        String name;
        try {
          name = Files.readString(task.resolve("comm")).trim();
        } catch (IOException ended) {
          continue;
        }
        if (name.startsWith("door") || name.equals("VM Thread")) {
          continue;
        }
        try {
          RealTime.moveToOrdinary(task.getFileName().toString());
        } catch (IOException e) {
          if (Files.exists(task)) {
            throw new IOException(
                "could not move thread "
                    + task.getFileName()
                    + " ("
                    + name
                    + ") of the door's JVM off the real-time policy",
                e);
          }
        }
      }
    }
  }

  /** The door itself, in its own JVM: see the class comment for its protocol. */
  public static void main(String[] args) throws IOException, InterruptedException {
    try (DoorServer server = new DoorServer(Answer::byPath)) {
      if (Boolean.getBoolean(REAL_TIME_PROPERTY)) {
        keepRealTimeForTheDoorsThreads();
      }
      System.out.println("READY " + server.port());
      System.out.flush();
      BufferedReader commands =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String command;
      while ((command = commands.readLine()) != null) {
        if (!command.equals("REPORT")) {
          throw new IllegalArgumentException("unknown command: " + command);
        }
        StringBuilder report = new StringBuilder();
        for (Arrival a : server.arrivals()) {
          String worker = a.worker();
          report
              .append("ARRIVAL ")
              .append(a.nanos())
              .append(a.opened() ? " opened " : " kept ")
              .append(a.status())
              .append(' ')
              .append(worker == null || worker.isBlank() ? "-" : worker.replace(' ', '_'))
              .append(' ')
              .append(a.request().method())
              .append(' ')
              .append(a.target())
              .append('\n');
        }
        System.out.print(report.append("END\n"));
        System.out.flush();
      }
    }
  }
}
