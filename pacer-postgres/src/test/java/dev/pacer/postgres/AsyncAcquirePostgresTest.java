package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LateTurns;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.spi.Cursor;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.JvmStalls;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.TurnTrace;
import dev.pacer.testing.WallClockSteps;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link PacedHttpClient#sendAsync} on {@link DestinationLimiter#acquireAsync()} against real
 * PostgreSQL, as an application sends: 1,000 requests, asked for from two threads at once, wait for
 * their turns with no thread per waiter, and each is sent when its turn comes. The run is held to
 * {@link FleetBounds} at the door; its twin sends the same through two limiters that share no
 * cursor, which must break the ceiling. Each request is traced from its turn to the door ({@link
 * TurnTrace}): the turns are held with no excuse, and a window over the bound at the door is
 * reported as skipped only when one of its requests left the client's hands half a turn or more
 * after the limiter handed it over, a delay the limiter cannot see.
 *
 * <p>Before the run the client is warmed up ({@link PacedHttpClient#warmUp}) and sends one paced
 * request, as an application's first request, which opens its connection.
 */
class AsyncAcquirePostgresTest {

  /** 50/s, 20 ms between turns. */
  private static final double RATE = 50;

  private static final int FUTURES = 1_000;
  private static final String OPENING_PATH = "/open";
  private static final String ASKED_PATH = "/async/";

  /**
   * Permits: a tenth of the futures hold one and wait on the scheduler for their turns (the next
   * second's), the rest wait in the permit queue. With a permit each, all thousand reservations
   * would be made at once, and on a busy host the run measured how fast one connection answers a
   * thousand statements rather than the pacing.
   */
  private static final int CONCURRENCY = 100;

  private static final Duration RUN = Duration.ofSeconds(5);

  /** The twin: long enough for 2 x 50/s to break the aggregate over a second and more. */
  private static final Duration TWIN_RUN = Duration.ofSeconds(2);

  /**
   * Threads the JVM may gain while the futures wait: the default scheduler's one, the four
   * round-trip threads and the two send threads (started by the warm-up and the opening request),
   * and a little for the JDK's own (JIT compilers, the HTTP client's). A thread asleep per waiter
   * would add a thousand.
   */
  private static final int MORE_THREADS_ALLOWED = 10;

  /**
   * What a run left: its arrivals (as a timeline and each), its requests' turns and sends, turns
   * given up as late, and what the JVM's threads did.
   */
  private record Run(
      Timeline arrivals,
      List<Arrival> each,
      TurnTrace trace,
      long late,
      List<Throwable> failedSends,
      long waiting,
      int threadsAdded,
      List<String> added) {}

  @Test
  void aThousandFuturesWaitWithoutThreadsAndKeepTheCeilingAtTheDoor() throws Exception {
    WallClockSteps.get();
    JvmStalls.get();
    try (Door door = Door.start();
        PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable())) {
      assertThat(cursor.connect(Duration.ofSeconds(30))).isTrue();
      String name = "async-" + UUID.randomUUID().toString().substring(0, 8);
      DestinationLimiter limiter = limiter(cursor, name);
      Run run = run(door, List.of(limiter), RUN);
      FleetBounds bounds = FleetBounds.at(RATE, "1,000 futures through sendAsync", door);
      Timeline steady = RunArrivals.steady(run.arrivals());

      assertThat(run.failedSends()).as("requests that failed").isEmpty();
      assertThat(run.waiting()).as("futures still waiting when the run ended").isGreaterThan(100);
      assertThat(run.threadsAdded())
          .as("threads added while the futures waited: %s", run.added())
          .isLessThanOrEqualTo(MORE_THREADS_ALLOWED);
      assertThat(LimiterProbe.availablePermits(limiter))
          .as("every permit back after the cancel")
          .isEqualTo(CONCURRENCY);
      bounds.assertDelivered(steady);
      long turnsInStalls =
          JvmStalls.get()
              .turnsInStallsBetween(
                  run.arrivals().first(),
                  run.arrivals().last(),
                  LateTurns.limit(Duration.ofNanos(Math.round(1e9 / RATE))).toNanos(),
                  RATE);
      bounds.assertFewLateTurnsBesideStalls(
          run.late(), run.arrivals().size() + run.late(), turnsInStalls);
      // Last, since a window broken by a request held up after its hand-over skips the rest.
      bounds.assertHeld(run.arrivals(), steady, run.trace(), run.each());
    }
  }

  @Test
  void twoLimitersSharingNoCursorBreakTheCeiling() throws Exception {
    try (Door door = Door.start()) {
      String name = "async-twin-" + UUID.randomUUID().toString().substring(0, 8);
      Run run =
          run(
              door,
              List.of(limiter(new LocalCursor(), name), limiter(new LocalCursor(), name)),
              TWIN_RUN);
      FleetBounds bounds =
          FleetBounds.at(RATE, "1,000 futures, two limiters, no shared cursor", door);
      assertThat(run.failedSends()).as("requests that failed").isEmpty();
      bounds.assertWindowBroke(run.arrivals());
      bounds.assertAggregateBroke(run.arrivals());
    }
  }

  private static DestinationLimiter limiter(Cursor cursor, String name) {
    return new LimiterRegistry(cursor)
        .limiter(
            Destination.builder(name)
                .ratePerSecond(RATE)
                .maxConcurrency(CONCURRENCY)
                .maxFetchingProcesses(1)
                .build());
  }

  /**
   * Warms up one client per limiter and opens its connection, then asks for {@link #FUTURES}
   * requests from two threads at once, spread over the limiters, and cancels what still waits after
   * {@code length}.
   */
  private static Run run(Door door, List<DestinationLimiter> limiters, Duration length)
      throws Exception {
    HttpClient http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    List<PacedHttpClient> clients = new ArrayList<>();
    TurnTrace trace = new TurnTrace(RATE);
    for (DestinationLimiter limiter : limiters) {
      PacedHttpClient client =
          PacedHttpClient.builder(http, LimiterLookup.only(limiter))
              .onRequest(
                  sent -> {
                    String path = sent.uri().getRawPath();
                    if (path.startsWith(ASKED_PATH)) {
                      trace.sent(path, sent.turnNanos(), sent.sentNanos());
                    }
                  })
              .build();
      client.warmUp(door.uri());
      client
          .sendAsync(get(door, OPENING_PATH), HttpResponse.BodyHandlers.discarding())
          .get(30, TimeUnit.SECONDS);
      clients.add(client);
    }
    long lateBefore = limiters.stream().mapToLong(DestinationLimiter::lateTurnsSkipped).sum();
    List<String> before = threadNames();
    AtomicInteger requests = new AtomicInteger();
    List<CompletableFuture<HttpResponse<Void>>> sent =
        Collections.synchronizedList(new ArrayList<>());
    List<Thread> askers = new ArrayList<>();
    for (int a = 0; a < 2; a++) {
      Thread asker =
          new Thread(
              () -> {
                for (int i = 0; i < FUTURES / 2; i++) {
                  int n = requests.incrementAndGet();
                  sent.add(
                      clients
                          .get(n % clients.size())
                          .sendAsync(
                              get(door, ASKED_PATH + n), HttpResponse.BodyHandlers.discarding()));
                }
              });
      asker.start();
      askers.add(asker);
    }
    for (Thread asker : askers) {
      asker.join();
    }
    int mostThreads = before.size();
    List<String> added = List.of();
    long end = System.nanoTime() + length.toNanos();
    while (System.nanoTime() < end) {
      List<String> names = threadNames();
      if (names.size() > mostThreads) {
        mostThreads = names.size();
        added = new ArrayList<>(names);
        before.forEach(added::remove);
      }
      Thread.sleep(50);
    }
    long waiting = sent.stream().filter(s -> !s.isDone()).count();
    sent.forEach(s -> s.cancel(false));
    List<Throwable> failedSends = new ArrayList<>();
    for (CompletableFuture<HttpResponse<Void>> s : sent) {
      try {
        assertThat(s.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      } catch (CancellationException cancelled) {
        // Still waiting for its turn at the end: nothing was sent.
      } catch (ExecutionException e) {
        failedSends.add(e.getCause());
      }
    }
    long late =
        limiters.stream().mapToLong(DestinationLimiter::lateTurnsSkipped).sum() - lateBefore;
    List<Arrival> arrivals =
        door.arrivals().stream().filter(a -> a.path().startsWith(ASKED_PATH)).toList();
    Timeline measured = Timeline.of(arrivals);
    System.out.printf(
        "sendAsync on %d limiter(s): at the door %s; %d turns given up as late;"
            + " threads %d before, at most %d while %d futures waited (%d still waiting at the"
            + " end; added: %s)%n",
        limiters.size(), measured, late, before.size(), mostThreads, FUTURES, waiting, added);
    return new Run(
        measured, arrivals, trace, late, failedSends, waiting, mostThreads - before.size(), added);
  }

  private static HttpRequest get(Door door, String path) {
    return HttpRequest.newBuilder(URI.create(door.url(path)))
        .timeout(Duration.ofSeconds(5))
        .build();
  }

  private static List<String> threadNames() {
    List<String> names = new ArrayList<>();
    Thread.getAllStackTraces().keySet().forEach(t -> names.add(t.getName()));
    return names;
  }
}
