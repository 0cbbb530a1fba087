package dev.pacer.postgres;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LateTurns;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.jdkhttp.SentRequest;
import dev.pacer.spi.Cursor;
import dev.pacer.testing.JvmStalls;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;

/**
 * The child JVM of {@link VirtualThreadsTest}, run on a JDK with virtual threads (21 or later; this
 * class is compiled for 17, so it starts them by reflection), written as an application on virtual
 * threads would be: its own cursor and registry, one {@link DoorClient} (a {@code PacedHttpClient}
 * over the JDK's client, warmed up with its documented {@code warmUp} and one paced opening
 * request, sent from a virtual thread as the application's first), and then a virtual thread per
 * request, each sending with the blocking {@code send}, which waits for its turn in {@link
 * DestinationLimiter#acquire()}.
 *
 * <p>It prints READY, waits for GO on stdin (so that the processes of a run start together), then
 * starts {@code threads} virtual threads, each sending one request to the door, with a query of its
 * own ({@code n=<i>}) so that the test can follow it from its turn to the door. After {@code
 * runMillis} it interrupts every thread still alive, as an application stopping would, and reports:
 * a {@code TRACE <target> <turnNanos> <sentNanos>} line per request sent (from the client's {@code
 * onRequest}), the steady part's {@link TurnsTaken} (turns from {@link RunArrivals#START_SECONDS}
 * after GO to the interrupt), and one {@code RESULT} line, with the count of JFR's {@code
 * jdk.VirtualThreadPinned} events (every one, no threshold).
 *
 * <p>The recording starts after the opening request and first pins a carrier on purpose (a virtual
 * thread that blocks in a class initializer, which pins on every JDK so far): that event must be
 * seen, or the count of the others proves nothing.
 *
 * <p>A virtual thread that died of anything but an interrupt makes it exit {@link
 * WorkerThreads#DIED} after its report.
 *
 * <p>Arguments: {@code shared|local jdbcUrl destination processes doorUrl member threads
 * ratePerSecond maxConcurrency runMillis}.
 */
public final class VirtualThreadWorker {

  private static final String PINNED = "jdk.VirtualThreadPinned";

  public static void main(String[] args) throws Exception {
    boolean shared = args[0].equals("shared");
    String jdbcUrl = args[1];
    String name = args[2];
    int processes = Integer.parseInt(args[3]);
    URI door = URI.create(args[4]);
    String member = args[5];
    int threads = Integer.parseInt(args[6]);
    double rate = Double.parseDouble(args[7]);
    int concurrency = Integer.parseInt(args[8]);
    long runMillis = Long.parseLong(args[9]);

    Cursor cursor =
        shared
            ? new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl).build())
            : new LocalCursor();
    if (cursor instanceof PostgresCursor pg && !pg.connect(Duration.ofSeconds(30))) {
      throw new IllegalStateException("could not connect to the test database");
    }
    DestinationLimiter limiter =
        new LimiterRegistry(cursor)
            .limiter(
                Destination.builder(name)
                    .ratePerSecond(rate)
                    .maxConcurrency(concurrency)
                    .maxFetchingProcesses(processes)
                    .build());
    // As an application would have by now, it logs with arguments: the first such call loads the
    // logger's formatter, which a limiter that gives up a late turn uses, on the virtual thread
    // that woke late.
    org.slf4j.LoggerFactory.getLogger(VirtualThreadWorker.class)
        .info(
            "{} virtual threads at {}/s, {} at once, for {} ms",
            threads,
            rate,
            concurrency,
            runMillis);
    WorkerThreads threadsOfTheRun = new WorkerThreads();
    ConcurrentLinkedQueue<SentRequest> traced = new ConcurrentLinkedQueue<>();
    AtomicReference<DoorClient> opened = new AtomicReference<>();
    threadsOfTheRun
        .startVirtual(() -> opened.set(DoorClient.opened(limiter, door, member, traced::add)))
        .join();
    threadsOfTheRun.exitIfAnyDied();
    DoorClient client = opened.get();

    Recording recording = new Recording();
    recording.enable(PINNED).withoutThreshold().withStackTrace();
    recording.start();
    threadsOfTheRun.startVirtual(PinsItsCarrier::load).join();

    // The takers are virtual threads: a stall of their carriers, as well as of the process, costs
    // their turns. One sampler on a platform thread sees the process's, one on a virtual thread
    // the carriers' too; the turns each may have cost are counted, and the larger allowed.
    List<JvmStalls> samplers =
        List.of(JvmStalls.get(), JvmStalls.startedBy(VirtualThreadWorker::startVirtual));
    System.out.println("READY");
    System.out.flush();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    if (!"GO".equals(in.readLine())) {
      throw new IllegalStateException("expected GO");
    }
    long go = System.nanoTime();
    AtomicInteger sent = new AtomicInteger();
    AtomicInteger interrupted = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    long skippedBefore = limiter.lateTurnsSkipped();
    List<Thread> all = new ArrayList<>(threads);
    for (int i = 0; i < threads; i++) {
      String query = "n=" + i;
      all.add(
          threadsOfTheRun.startVirtual(
              () -> {
                try {
                  client.send(query);
                  sent.incrementAndGet();
                } catch (InterruptedException e) {
                  interrupted.incrementAndGet();
                } catch (Exception e) {
                  if (failed.getAndIncrement() == 0) {
                    e.printStackTrace();
                  }
                }
              }));
    }
    long steadyFrom = go + (long) (RunArrivals.START_SECONDS * 1e9);
    sleepUntil(steadyFrom);
    long sentAtSteady = sent.get();
    long lateAtSteady = limiter.lateTurnsSkipped();
    sleepUntil(go + TimeUnit.MILLISECONDS.toNanos(runMillis));
    long steadyTo = System.nanoTime();
    long lateLimit = LateTurns.limit(Duration.ofNanos(Math.round(1e9 / rate))).toNanos();
    TurnsTaken steady =
        new TurnsTaken(
            sent.get() - sentAtSteady,
            limiter.lateTurnsSkipped() - lateAtSteady,
            samplers.stream()
                .mapToLong(s -> s.longestBetween(steadyFrom, steadyTo))
                .max()
                .orElseThrow(),
            samplers.stream()
                .mapToLong(s -> s.totalBetween(steadyFrom, steadyTo))
                .max()
                .orElseThrow(),
            samplers.stream()
                .mapToLong(s -> s.turnsInStallsBetween(steadyFrom, steadyTo, lateLimit, rate))
                .max()
                .orElseThrow());
    all.forEach(Thread::interrupt);
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
    if (cursor instanceof PostgresCursor pg) {
      pg.close();
    }

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
      } else if (pinned++ < 20) {
        System.err.println(
            "pinned "
                + event.getDuration().toNanos() / 1_000
                + " us ("
                + (event.hasField("pinnedReason")
                    ? event.getValue("pinnedReason")
                    : "no reason given")
                + "):"
                + stack(event));
      }
    }
    Files.delete(jfr);
    for (SentRequest r : traced) {
      String line = TraceLines.line(r);
      if (line != null) {
        System.out.println(line);
      }
    }
    System.out.println(steady.line());
    System.out.printf(
        "RESULT java=%s sent=%d interrupted=%d failed=%d alive=%d permits=%d/%d"
            + " pinned=%d control=%d skipped=%d%n",
        Runtime.version().feature(),
        sent.get(),
        interrupted.get(),
        failed.get(),
        alive,
        permits,
        concurrency,
        pinned,
        control,
        skipped);
    System.out.flush();
    threadsOfTheRun.exitIfAnyDied();
  }

  private static void sleepUntil(long nanos) throws InterruptedException {
    long left = nanos - System.nanoTime();
    if (left > 0) {
      TimeUnit.NANOSECONDS.sleep(left);
    }
  }

  private static String stack(RecordedEvent event) {
    StringBuilder out = new StringBuilder();
    if (event.getStackTrace() != null) {
      for (RecordedFrame frame : event.getStackTrace().getFrames()) {
        out.append("\n    at ")
            .append(frame.getMethod().getType().getName())
            .append('.')
            .append(frame.getMethod().getName())
            .append(':')
            .append(frame.getLineNumber());
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

  /** Starts {@code task} on a virtual thread (JDK 21; this class compiles for 17). */
  private static void startVirtual(Runnable task) {
    try {
      Thread.class.getMethod("startVirtualThread", Runnable.class).invoke(null, task);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("no virtual threads on this JDK", e);
    }
  }
}
