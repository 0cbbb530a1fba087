package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Cursor;
import dev.pacer.Destination;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.testing.Timeline;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The JDK decorator, the OkHttp interceptor and the Apache chain handler, each on its own thread
 * and with its own registry (as three processes would have), pacing one destination through one
 * {@link PostgresCursor} on a real PostgreSQL, in real time. The ceiling is judged where requests
 * arrive: the busiest 1-s window at the local destination, from its first request, is at most the
 * ceiling + 1, and the delivered rate is not collapsed. The twin paces each client on its own
 * {@link LocalCursor}, as a per-process pacer would, and breaks the same bound, so the first test
 * can fail.
 */
class ThreeClientsOneCursorTest {

  private static final int CEILING = 10;
  private static final Duration RUN = Duration.ofSeconds(6);

  @Test
  void threeClientsOnOneCursorKeepTheCeilingAtTheDestination() throws Exception {
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl()).build())) {
      Run run = run("three-clients-" + System.nanoTime(), kind -> cursor, RUN);
      Timeline arrivals = run.timeline();
      System.out.printf("three clients, one PostgresCursor: %d arrivals, busiest 1-s window %d,"
              + " %.2f/s delivered, by client %s%n", arrivals.size(),
          arrivals.peakOneSecondWindow(), arrivals.aggregateRatePerSecond(), run.byClient());
      assertThat(arrivals.peakOneSecondWindow()).isLessThanOrEqualTo(CEILING + 1);
      assertThat(arrivals.aggregateRatePerSecond()).isGreaterThanOrEqualTo(0.9 * CEILING);
      assertThat(run.byClient().values()).as("every client sent its share")
          .allSatisfy(n -> assertThat(n).isGreaterThanOrEqualTo(10));
    }
  }

  @Test
  void theTwinPacingEachClientOnItsOwnCursorBreaksTheCeiling() throws Exception {
    Run run = run("three-cursors-" + System.nanoTime(), kind -> new LocalCursor(),
        Duration.ofSeconds(3));
    Timeline arrivals = run.timeline();
    System.out.printf("twin, a LocalCursor each: busiest 1-s window %d%n",
        arrivals.peakOneSecondWindow());
    assertThat(arrivals.peakOneSecondWindow()).isGreaterThan(2 * CEILING);
  }

  /** What the destination saw. */
  private record Run(List<ArrivalServer.Arrival> arrivals, Map<Client, Integer> byClient) {
    Timeline timeline() {
      return new Timeline(arrivals.stream().map(ArrivalServer.Arrival::nanos).toList());
    }
  }

  /**
   * Each client on its own thread, sending GETs for {@code length}, paced on its cursor. Each
   * client first sends one unpaced request to another local server, so that its cold start
   * (class loading, its first connection) is not in the measured run: a request leaving late after
   * its turn is the client's lateness, which {@code DestinationFetcher.warmUp} exists to remove
   * and this test does not measure.
   */
  private static Run run(String name, Function<Client, Cursor> cursors, Duration length)
      throws Exception {
    Destination destination = Destination.builder(name).ratePerSecond(CEILING)
        .maxConcurrency(2).maxFetchingProcesses(3).build();
    Map<Client, Throwable> failures = new ConcurrentHashMap<>();
    try (ArrivalServer server = new ArrivalServer(); ArrivalServer warmUp = new ArrivalServer()) {
      int port = server.uri("/").getPort();
      CyclicBarrier warm = new CyclicBarrier(Client.values().length);
      List<Thread> threads = new ArrayList<>();
      for (Client kind : Client.values()) {
        LimiterRegistry registry = new LimiterRegistry(cursors.apply(kind));
        LimiterLookup limiters = uri -> uri.getPort() == port
            ? Optional.of(registry.limiter(destination)) : Optional.empty();
        Thread thread = new Thread(() -> {
          try (Client.Getter client = kind.open(limiters)) {
            client.get(warmUp.uri("/warm"));
            warm.await();
            long end = System.nanoTime() + length.toNanos();
            while (System.nanoTime() - end < 0) {
              assertThat(client.get(server.uri("/ok/" + kind)).status()).isEqualTo(200);
            }
          } catch (Throwable t) {
            failures.put(kind, t);
          }
        }, "client-" + kind);
        threads.add(thread);
        thread.start();
      }
      for (Thread thread : threads) {
        thread.join();
      }
      assertThat(failures).isEmpty();
      Map<Client, Integer> byClient = new EnumMap<>(Client.class);
      for (Client kind : Client.values()) {
        byClient.put(kind, (int) server.paths().stream().filter(("/ok/" + kind)::equals).count());
      }
      return new Run(server.arrivals(), byClient);
    }
  }
}
