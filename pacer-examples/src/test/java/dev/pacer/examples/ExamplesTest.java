package dev.pacer.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.TableLayout;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.Door;
import dev.pacer.testing.DoorExtension;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Runs the documentation's examples against real PostgreSQL and a {@link Door} of their own (the
 * senders share this JVM), the ceiling judged there by {@link FleetBounds}.
 */
class ExamplesTest {

  /** A door for each test, with no arrivals before the test's own. */
  @RegisterExtension final DoorExtension door = new DoorExtension();

  private URI uri(String path) {
    return URI.create(door.url(path));
  }

  @Test
  void theLimiterAroundAClientPacesAndClassifies() throws Exception {
    List<HttpRequest> requests = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      String path = i == 4 ? "/status/429/1" : i == 9 ? "/status/403" : "/" + i;
      requests.add(HttpRequest.newBuilder(uri(path)).build());
    }
    LimiterExample.Outcome outcome =
        LimiterExample.fetchAll(
            TestDatabase.jdbcUrl(), new Properties(), HttpClient.newHttpClient(), requests);

    assertThat(outcome.deferred())
        .extracting(r -> r.uri().getPath())
        .containsExactly("/status/429/1");
    assertThat(outcome.stopped()).as("the 403 stopped the list").isTrue();
    assertThat(outcome.fetched()).hasSize(8);
    Timeline arrivals = door.timeline();
    assertThat(arrivals.size()).as("nothing after the 403").isEqualTo(10);
    FleetBounds.at(7, "the limiter example", door).assertHeld(arrivals);
    // Turns 1/7 s apart to the 429 on the fifth (0.57 s), a pause of 1 s, then 2/7 s apart:
    // the 403 arrives at 2.71 s.
    assertThat(arrivals.spanSeconds()).isBetween(2.65, 4.0);
  }

  @Test
  void theMetersShowWhatTheLimiterDid() throws Exception {
    List<HttpRequest> requests = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      requests.add(HttpRequest.newBuilder(uri(i == 2 ? "/status/429" : "/" + i)).build());
    }
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    MetricsExample.fetchAll(
        TestDatabase.jdbcUrl(), new Properties(), HttpClient.newHttpClient(), requests, meters);

    String d = "thumbnails.example.com";
    assertThat(
            meters
                .get("pacer.reservations")
                .tag("destination", d)
                .tag("outcome", "shared")
                .counter()
                .count())
        .isEqualTo(4);
    assertThat(meters.get("pacer.acquire.wait").tag("destination", d).timer().count()).isEqualTo(4);
    assertThat(meters.get("pacer.throttled").tag("destination", d).counter().count()).isEqualTo(1);
    assertThat(meters.get("pacer.backoff.multiplier").tag("destination", d).gauge().value())
        .isEqualTo(2);
    assertThat(meters.get("pacer.cursor.latched").tag("destination", d).gauge().value()).isZero();
  }

  @Test
  void threeClientsPacedByHostShareOneCeiling() throws Exception {
    List<URI> uris = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      uris.add(uri("/" + i));
    }
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable())) {
      LimiterLookup limiters =
          HttpClientExamples.byHost(new LimiterRegistry(cursor), "127.0.0.1", 10);
      ExecutorService threads = Executors.newFixedThreadPool(3);
      try {
        List<Future<Integer>> ok =
            threads.invokeAll(
                List.of(
                    () -> HttpClientExamples.jdk(limiters, uris),
                    () -> HttpClientExamples.okhttp(limiters, uris),
                    () -> HttpClientExamples.apache(limiters, uris)));
        for (Future<Integer> each : ok) {
          assertThat(each.get()).isEqualTo(8);
        }
      } finally {
        threads.shutdownNow();
      }
    }
    Timeline arrivals = door.timeline();
    assertThat(arrivals.size()).isEqualTo(24);
    FleetBounds bounds = FleetBounds.at(10, "three clients paced by host", door);
    bounds.assertHeld(arrivals, arrivals);
    bounds.assertDelivered(arrivals);
    // 24 turns 0.1 s apart: the last arrives 2.3 s after the first.
    assertThat(arrivals.spanSeconds()).isGreaterThan(2.2);
  }

  @Test
  void asynchronousSendsKeepTheCeilingWithoutAWaitingThread() throws Exception {
    List<HttpRequest> requests = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      requests.add(HttpRequest.newBuilder(uri("/" + i)).build());
    }
    DestinationLimiter limiter;
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable())) {
      limiter =
          new LimiterRegistry(cursor)
              .limiter(
                  Destination.builder("async-example")
                      .ratePerSecond(10)
                      .maxConcurrency(30)
                      .build());
      long start = System.nanoTime();
      List<CompletableFuture<HttpResponse<String>>> responses =
          AsyncExample.fetchAll(limiter, uri("/"), requests);
      assertThat(door.arrivals()).as("all 30 issued before the second turn").hasSizeLessThan(2);
      for (CompletableFuture<HttpResponse<String>> r : responses) {
        assertThat(r.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      }
      assertThat((System.nanoTime() - start) / 1e9).isLessThan(30);
    }
    Timeline arrivals = door.timeline();
    assertThat(arrivals.size()).isEqualTo(30);
    FleetBounds bounds = FleetBounds.at(10, "the asynchronous example", door);
    // The example's client is new: its first request opens the connection inside its turn.
    Timeline steady = arrivals.withoutFirst();
    bounds.assertHeld(arrivals, steady);
    bounds.assertDelivered(steady);
    bounds.assertFewLateTurns(limiter.lateTurnsSkipped(), 30 + limiter.lateTurnsSkipped());
    // 30 turns 0.1 s apart: the last arrives 2.9 s after the first.
    assertThat(arrivals.spanSeconds()).isGreaterThan(2.8);
  }
}
