package dev.pacer.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.DestinationLimiter;
import dev.pacer.testing.Door;
import dev.pacer.testing.DoorExtension;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.web.client.RestClient;

/**
 * A Spring Boot application as a user would write it: a {@code DataSource} from {@code
 * spring.datasource.*} (HikariCP), Pacer's starter on the class path, one destination in its
 * properties, and a {@code RestClient} from the builder Spring Boot hands out. Nothing in the
 * application mentions Pacer's pacing; the ceiling is measured where the requests arrive.
 */
class SampleApplicationTest {

  private static final double CEILING = 10;
  private static final int REQUESTS = 40;
  private static final int THREADS = 6;

  /** The application under test: what a user writes, nothing more. */
  // tag::application[]
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class SampleApplication {

    @Bean
    RestClient restClient(RestClient.Builder builder) { // Boot's builder: paced by the starter
      return builder.build();
    }
  }

  // end::application[]

  @RegisterExtension static final DoorExtension door = new DoorExtension();

  private static ConfigurableApplicationContext start(String... more) {
    List<String> properties =
        new ArrayList<>(
            List.of(
                // tag::properties[]
                "spring.datasource.url=" + Pools.url(),
                "spring.datasource.username=postgres",
                "spring.datasource.hikari.maximum-pool-size=4", // the cursor keeps 2 of them
                "pacer.destinations.sample.rate-per-second=" + CEILING,
                "pacer.destinations.sample.max-concurrency=" + THREADS,
                "pacer.destinations.sample.hosts=127.0.0.1")); // requests to these hosts are paced
    // end::properties[]
    properties.addAll(List.of(more));
    return new SpringApplicationBuilder(SampleApplication.class)
        .web(WebApplicationType.NONE)
        .properties(properties.toArray(String[]::new))
        .run();
  }

  /** A path of its own at the door for one run: {@code /<name>-<random>/}. */
  private static String run(String name) {
    return "/" + name + "-" + UUID.randomUUID().toString().substring(0, 8) + "/";
  }

  /** The arrivals at the door under {@code run}. */
  private static Timeline arrivals(String run) throws IOException {
    return Timeline.of(door.arrivals().stream().filter(a -> a.path().startsWith(run)).toList());
  }

  /**
   * {@code REQUESTS} GETs to {@code <run>item/<i>} from {@code THREADS} threads, as fast as the
   * client lets them go.
   */
  private static void fetchAll(RestClient client, String run) throws Exception {
    ExecutorService threads = Executors.newFixedThreadPool(THREADS);
    AtomicInteger next = new AtomicInteger();
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        done.add(
            threads.submit(
                () -> {
                  int i;
                  while ((i = next.incrementAndGet()) <= REQUESTS) {
                    client.get().uri(door.url(run + "item/" + i)).retrieve().body(String.class);
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      threads.shutdownNow();
    }
  }

  /**
   * Every arrival counts, the first request included, judged at the {@link Door} by {@link
   * FleetBounds}: the busiest window over them all, the aggregate and the delivered rate over the
   * concurrent requests. The first request goes alone, before the threads start: the starter warms
   * the client up at start ({@code pacer.http.warm-up}), which pays its classes and threads, but
   * the first connection to the destination is still opened inside the first turn, and in a cold
   * JVM requests of other threads granted turns meanwhile would leave with it.
   */
  @Test
  void theApplicationsRestClientHoldsTheCeilingAndShowsPacersMeters() throws Exception {
    try (ConfigurableApplicationContext app = start()) {
      RestClient client = app.getBean(RestClient.class);
      String run = run("sample");
      client.get().uri(door.url(run + "first")).retrieve().body(String.class);
      fetchAll(client, run);
      Timeline t = arrivals(run);
      // The concurrent requests: the first one went alone, and waited for nobody.
      Timeline concurrent =
          Timeline.of(
              door.arrivals().stream().filter(a -> a.path().startsWith(run + "item/")).toList());
      System.out.printf("sample application, paced: %s; after the first: %s%n", t, concurrent);
      assertThat(t.size()).isEqualTo(REQUESTS + 1);
      FleetBounds bounds = FleetBounds.at(CEILING, "sample application, paced", door);
      bounds.assertHeld(t, concurrent);
      bounds.assertDelivered(concurrent);
      DestinationLimiter limiter = app.getBean(PacerDestinations.class).limiter("sample");
      bounds.assertFewLateTurns(
          limiter.lateTurnsSkipped(), REQUESTS + 1 + limiter.lateTurnsSkipped());

      MeterRegistry meters = app.getBean(MeterRegistry.class);
      assertThat(meters.get("pacer.acquire.wait").tag("destination", "sample").timer().count())
          .as("turns timed")
          .isEqualTo(REQUESTS + 1);
      assertThat(
              meters
                  .get("pacer.reservations")
                  .tag("destination", "sample")
                  .tag("outcome", "shared")
                  .counter()
                  .count())
          .isEqualTo(REQUESTS + 1);
    }
  }

  /**
   * A 429 goes back to the application as Spring's own exception, and the destination's limiter has
   * already backed off; the meters count it.
   */
  @Test
  void aRateAnswerReachesTheApplicationAndBacksTheDestinationOff() throws Exception {
    try (ConfigurableApplicationContext app = start()) {
      RestClient client = app.getBean(RestClient.class);
      assertThatThrownBy(
              () -> client.get().uri(door.url("/status/429/1")).retrieve().body(String.class))
          .isInstanceOf(HttpClientErrorException.TooManyRequests.class);
      DestinationLimiter limiter = app.getBean(PacerDestinations.class).limiter("sample");
      assertThat(limiter.backoffMultiplier()).isEqualTo(2);
      assertThat(
              app.getBean(MeterRegistry.class)
                  .get("pacer.throttled")
                  .tag("destination", "sample")
                  .counter()
                  .count())
          .isEqualTo(1);
    }
  }

  /** The same application with the starter's RestClient pacing switched off: the test can fail. */
  @Test
  void withoutPacingTheSameApplicationBreaksTheCeiling() throws Exception {
    try (ConfigurableApplicationContext app = start("pacer.rest-client.enabled=false")) {
      String run = run("unpaced");
      fetchAll(app.getBean(RestClient.class), run);
      Timeline t = arrivals(run);
      System.out.printf("sample application, unpaced: %s%n", t);
      assertThat(t.size()).isEqualTo(REQUESTS);
      FleetBounds.at(CEILING, "sample application, unpaced", door).assertWindowBroke(t);
    }
  }
}
