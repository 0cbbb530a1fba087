package dev.pacer.postgres;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.Slot;
import dev.pacer.TimeSource;
import java.net.URI;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;

/**
 * The child JVM of {@link VirtualThreadsTest}, run on a JDK with virtual threads (21 or later;
 * this class is compiled for 17, so it starts them by reflection). Starts {@code threads} virtual
 * threads that each take one turn with the blocking {@link DestinationLimiter#acquire()} on a
 * real {@link PostgresCursor} and send one request to the destination; after {@code runMillis}
 * interrupts those still waiting, and reports on one line what happened, with the count of JFR's
 * {@code jdk.VirtualThreadPinned} events (every one, no threshold).
 *
 * <p>One turn and one request are taken first, outside the recording, so that the classes on the
 * path are loaded. Then, recorded, it pins a carrier on purpose once (a virtual thread that blocks in a class
 * initializer, which pins on every JDK so far): that event must be seen, or the count of the
 * others proves nothing.
 *
 * <p>A virtual thread that died of anything but an interrupt, the warm-up's included, makes it
 * exit {@link WorkerThreads#DIED} after its report.
 *
 * <p>Arguments: {@code jdbcUrl destination doorUri threads ratePerSecond maxConcurrency
 * runMillis}.
 */
public final class VirtualThreadWorker {

  /** The path of the warm-up request, which the test leaves out of the run's arrivals. */
  static final String WARM_UP_PATH = "/warm";

  private static final String PINNED = "jdk.VirtualThreadPinned";
  private static final int WAITING = 0;
  private static final int SENDING = 1;
  private static final int STOPPED = 2;

  public static void main(String[] args) throws Exception {
    String jdbcUrl = args[0];
    String name = args[1];
    URI door = URI.create(args[2]);
    int threads = Integer.parseInt(args[3]);
    double rate = Double.parseDouble(args[4]);
    int concurrency = Integer.parseInt(args[5]);
    long runMillis = Long.parseLong(args[6]);

    PostgresCursor cursor = new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl).build());
    if (!cursor.connect(Duration.ofSeconds(30))) {
      throw new IllegalStateException("could not connect to the test database");
    }
    LimiterRegistry registry = new LimiterRegistry(cursor);
    DestinationLimiter limiter = registry.limiter(Destination.builder(name)
        .ratePerSecond(rate).maxConcurrency(concurrency).maxFetchingProcesses(1).build());
    Connections client = new Connections(door);
    // As an application would have by now, it logs with arguments: the first such call loads the
    // logger's formatter, and a limiter that gives up a late turn warns with arguments, on the
    // virtual thread that woke late (measured: that first warning pinned its carrier for 15 ms,
    // in BuiltinClassLoader under slf4j's AbstractLogger.handleArgArrayCall).
    org.slf4j.LoggerFactory.getLogger(VirtualThreadWorker.class).info(
        "{} virtual threads at {}/s, {} at once, for {} ms", threads, rate, concurrency, runMillis);
    // The paths of the run taken once first, on virtual threads, outside the recording: a turn
    // and a request, a read that waits for its answer, a wait for a permit interrupted, a wait for
    // a turn interrupted. The first use of a class loads it, and a virtual thread that meets a
    // class being loaded pins its carrier for that once (measured: 10-18 such events, in
    // BuiltinClassLoader and the HTTP client's class initializers, when 10,000 threads start cold;
    // then one of 7.5 ms waiting for the JDK's socket poller, first used by a read that waited).
    WorkerThreads threadsOfTheRun = new WorkerThreads();
    threadsOfTheRun.startVirtual(() -> {
      try (Slot slot = limiter.acquire()) {
        client.get(WARM_UP_PATH);
        client.waitOnASocketOnce();
      }
    }).join();
    // A connection for each request that can be in flight at once: one per permit.
    client.open(concurrency, WARM_UP_PATH);
    List<Slot> allPermits = new ArrayList<>();
    for (int i = 0; i < concurrency; i++) {
      allPermits.add(limiter.acquire());
    }
    Thread queued = threadsOfTheRun.startVirtual(() -> acquireUntilInterrupted(limiter));
    // Interrupted only once parked: interrupted as soon as it was queued, it had not yet made its
    // future's waiter, and in 2 of 3 runs beside a CPU hog a waiter of the run pinned its carrier
    // there, for 0.5 and 1 ms (CompletableFuture.waitingGet's first line, "freeze or preempt
    // failed"); none did in the 11 runs since.
    while (!blockedIn(queued, "java.util.concurrent.locks.LockSupport", "park")) {
      Thread.sleep(1);
    }
    queued.interrupt();
    queued.join();
    allPermits.forEach(Slot::close);
    // The wait for a turn is interrupted once the thread sleeps in it: that is the path to warm.
    // (An interrupt during its round trip to the database costs the thread nothing more than a
    // turn: InterruptedRoundTripTest.) Its turn is a second away, on a destination of its own.
    DestinationLimiter slow = registry.limiter(Destination.builder(name + "-warm")
        .ratePerSecond(1).maxConcurrency(1).maxFetchingProcesses(1).build());
    slow.acquire().close();
    Thread sleeping = threadsOfTheRun.startVirtual(() -> acquireUntilInterrupted(slow));
    while (!blockedIn(sleeping, TimeSource.SYSTEM.getClass().getName(), "sleepNanos")
        || !blockedIn(sleeping, LockSupport.class.getName(), "parkNanos")) {
      Thread.sleep(1);
    }
    sleeping.interrupt();
    sleeping.join();

    Recording recording = new Recording();
    recording.enable(PINNED).withoutThreshold().withStackTrace();
    recording.start();
    threadsOfTheRun.startVirtual(PinsItsCarrier::load).join();

    long skippedBefore = limiter.lateTurnsSkipped();
    AtomicInteger sent = new AtomicInteger();
    AtomicInteger interrupted = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    List<Thread> all = new ArrayList<>(threads);
    List<AtomicInteger> phases = new ArrayList<>(threads);
    // Each request's turn and the instant its thread began to send it, kept in arrays: recording
    // them allocates nothing and links nothing on the way to the door (a string built there linked
    // its concatenation at the run's first request, measured delaying that request 8 to 17 ms).
    long[] turnAt = new long[threads];
    long[] sentAt = new long[threads];
    for (int i = 0; i < threads; i++) {
      int index = i;
      String path = "/" + i;
      AtomicInteger phase = new AtomicInteger(WAITING);
      phases.add(phase);
      all.add(threadsOfTheRun.startVirtual(() -> {
        try (Slot slot = limiter.acquire()) {
          if (phase.compareAndSet(WAITING, SENDING)) {
            turnAt[index] = slot.turnNanos();
            sentAt[index] = System.nanoTime();
            client.get(path);
            sent.incrementAndGet();
          } else {
            Thread.interrupted(); // stopped as it was granted: nothing sent
            interrupted.incrementAndGet();
          }
        } catch (InterruptedException e) {
          interrupted.incrementAndGet();
        } catch (Exception e) {
          if (failed.getAndIncrement() == 0) {
            e.printStackTrace();
          }
        }
      }));
    }
    Thread.sleep(runMillis);
    // The threads still waiting for a turn are interrupted; a request already on its way is left
    // to finish (interrupting the HTTP client's send is not what this measures).
    for (int i = 0; i < threads; i++) {
      if (phases.get(i).compareAndSet(WAITING, STOPPED)) {
        all.get(i).interrupt();
      }
    }
    long joinBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    int alive = 0;
    for (Thread t : all) {
      long left = joinBy - System.nanoTime();
      if (left > 0) {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
      }
      alive += t.isAlive() ? 1 : 0;
    }
    int permits = LimiterProbe.availablePermits(limiter);
    long skipped = limiter.lateTurnsSkipped() - skippedBefore;
    cursor.close();

    recording.stop();
    Path jfr = Files.createTempFile("pinning", ".jfr");
    recording.dump(jfr);
    recording.close();
    int control = 0;
    int pinned = 0;
    for (RecordedEvent event : RecordingFile.readAllEvents(jfr)) {
      if (!event.getEventType().getName().equals(PINNED)) {
        continue;
      }
      if (mentions(event, PinsItsCarrier.class.getName())) {
        control++;
      } else {
        if (pinned++ < 20) {
          System.err.println("pinned " + event.getDuration().toNanos() / 1_000 + " us ("
              + (event.hasField("pinnedReason") ? event.getValue("pinnedReason") : "no reason given")
              + "):" + stack(event));
        }
      }
    }
    Files.delete(jfr);
    // System.nanoTime() is the machine's monotonic clock on Linux, the door's clock too: each
    // request's turn and send, printed so that the test can take the door's busiest window apart.
    for (int i = 0; i < threads; i++) {
      if (sentAt[i] != 0) {
        System.out.println("SENT /" + i + " " + turnAt[i] + " " + sentAt[i]);
      }
    }
    System.out.printf("RESULT java=%s sent=%d interrupted=%d failed=%d alive=%d permits=%d/%d"
            + " pinned=%d control=%d skipped=%d%n", Runtime.version().feature(), sent.get(),
        interrupted.get(), failed.get(), alive, permits, concurrency, pinned, control, skipped);
    System.out.flush();
    threadsOfTheRun.exitIfAnyDied();
  }

  private static void acquireUntilInterrupted(DestinationLimiter limiter) {
    try (Slot slot = limiter.acquire()) {
      throw new IllegalStateException("the warm-up's waiter was granted before its interrupt");
    } catch (InterruptedException expected) {
      // the path to warm
    }
  }

  /** Whether {@code thread} is in the method {@code className.methodName}. */
  private static boolean blockedIn(Thread thread, String className, String methodName) {
    for (StackTraceElement frame : thread.getStackTrace()) {
      if (frame.getClassName().equals(className) && frame.getMethodName().equals(methodName)) {
        return true;
      }
    }
    return false;
  }

  private static String stack(RecordedEvent event) {
    StringBuilder out = new StringBuilder();
    if (event.getStackTrace() != null) {
      for (RecordedFrame frame : event.getStackTrace().getFrames()) {
        out.append("\n    at ").append(frame.getMethod().getType().getName()).append('.')
            .append(frame.getMethod().getName()).append(':').append(frame.getLineNumber());
      }
    }
    return out.toString();
  }

  private static boolean mentions(RecordedEvent event, String className) {
    if (event.getStackTrace() == null) {
      return false;
    }
    for (RecordedFrame frame : event.getStackTrace().getFrames()) {
      if (frame.getMethod().getType().getName().equals(className)) {
        return true;
      }
    }
    return false;
  }

  /**
   * HTTP/1.1 GETs on kept-alive connections, written by the calling thread itself: a request
   * leaves the moment its thread writes it, with no hand-over to a client's own threads (the
   * JDK's HTTP client passes each request through two, whose delays on a busy host bunched the
   * arrivals: 103 in the busiest second at the door, against 101 as sent).
   */
  static final class Connections {
    private final InetSocketAddress address;
    private final ConcurrentLinkedQueue<Socket> idle = new ConcurrentLinkedQueue<>();

    Connections(URI door) {
      this.address = new InetSocketAddress(door.getHost(), door.getPort());
    }

    /**
     * Opens {@code count} connections and sends one request to {@code path} on each, so that a run
     * with at most {@code count} requests in flight opens none: the door reads a new connection's
     * first request only once it has accepted it and started its thread, and on a busy host that
     * stamped it 5 to 82 ms late, while the thread that sent it waited for the answer, holding up
     * the requests behind it.
     */
    void open(int count, String path) throws IOException {
      List<Socket> opened = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        opened.add(connect());
      }
      for (Socket socket : opened) {
        request(socket, path);
      }
      idle.addAll(opened);
    }

    /**
     * Reads an answer to nothing on a connection of its own until a 1-ms timeout: a read that
     * waits, which a request's read does only when its answer is not there yet.
     */
    void waitOnASocketOnce() throws IOException {
      try (Socket socket = connect()) {
        socket.setSoTimeout(1);
        socket.getInputStream().read();
        throw new IllegalStateException("the destination answered a request never sent");
      } catch (SocketTimeoutException expected) {
        // the read waited, and the JDK's poller with it
      }
    }

    void get(String path) throws IOException {
      Socket socket = idle.poll();
      if (socket == null) {
        socket = connect();
      }
      request(socket, path);
      idle.offer(socket);
    }

    private Socket connect() throws IOException {
      Socket socket = new Socket();
      socket.setTcpNoDelay(true);
      socket.connect(address, 10_000);
      socket.setSoTimeout(10_000);
      return socket;
    }

    /** One GET on {@code socket}; closes it if the answer is not a 200. */
    private void request(Socket socket, String path) throws IOException {
      OutputStream out = socket.getOutputStream();
      out.write(("GET " + path + " HTTP/1.1\r\nHost: " + address.getHostString() + "\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = socket.getInputStream();
      String head = readHead(in);
      if (!head.startsWith("HTTP/1.1 200")) {
        socket.close();
        throw new IOException("the destination answered " + head.lines().findFirst().orElse(""));
      }
      long length = head.lines().map(l -> l.toLowerCase(Locale.ROOT))
          .filter(l -> l.startsWith("content-length:"))
          .mapToLong(l -> Long.parseLong(l.substring(15).trim())).findFirst().orElse(0);
      in.skipNBytes(length);
    }

    private static String readHead(InputStream in) throws IOException {
      ByteArrayOutputStream head = new ByteArrayOutputStream();
      int matched = 0;
      while (matched < 4) {
        int b = in.read();
        if (b < 0) {
          throw new IOException("the destination closed the connection mid-answer");
        }
        head.write(b);
        matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
      }
      return head.toString(StandardCharsets.US_ASCII);
    }
  }

  /** Blocks in its class initializer: a virtual thread doing so pins its carrier. */
  static final class PinsItsCarrier {
    static {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    static void load() {
      // Loading the class runs the initializer.
    }
  }
}
