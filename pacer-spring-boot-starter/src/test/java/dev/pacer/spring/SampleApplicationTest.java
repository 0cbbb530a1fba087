package dev.pacer.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.DestinationLimiter;
import dev.pacer.testing.Timeline;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
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
    RestClient restClient(RestClient.Builder builder) {   // Boot's builder: paced by the starter
      return builder.build();
    }
  }
  // end::application[]

  private static ConfigurableApplicationContext start(ArrivalCounter destination,
      String... more) {
    List<String> properties = new ArrayList<>(List.of(
        // tag::properties[]
        "spring.datasource.url=" + Pools.url(),
        "spring.datasource.username=postgres",
        "spring.datasource.hikari.maximum-pool-size=4",   // the cursor keeps 2 of them
        "pacer.destinations.sample.rate-per-second=" + CEILING,
        "pacer.destinations.sample.max-concurrency=" + THREADS,
        "pacer.destinations.sample.hosts=127.0.0.1"));    // requests to these hosts are paced
        // end::properties[]
    properties.addAll(List.of(more));
    return new SpringApplicationBuilder(SampleApplication.class)
        .web(WebApplicationType.NONE)
        .properties(properties.toArray(String[]::new))
        .run();
  }

  /** {@code REQUESTS} GETs from {@code THREADS} threads, as fast as the client lets them go. */
  private static void fetchAll(RestClient client, ArrivalCounter destination) throws Exception {
    ExecutorService threads = Executors.newFixedThreadPool(THREADS);
    AtomicInteger next = new AtomicInteger();
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        done.add(threads.submit(() -> {
          int i;
          while ((i = next.incrementAndGet()) <= REQUESTS) {
            client.get().uri(destination.url("/item/" + i)).retrieve().body(String.class);
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
   * Every arrival counts, the first request included. That first request goes alone, before the
   * threads start: in a cold JVM the JDK client's first request spends 100-300 ms loading its
   * classes and starting its selector thread after its turn began, and requests of other threads
   * granted turns meanwhile leave with it (measured here, at load 25: the first 4 arrivals within
   * 13 ms, a busiest window of 13 once). The starter now warms the client up at start ({@code
   * pacer.http.warm-up}), which pays the classes and the threads; the first connection to the
   * destination is still opened inside the first turn, so the first request still goes alone.
   *
   * <p>The destination runs in the application's JVM: a stall of the whole JVM on a busy host
   * (measured once at load 17: 260 ms without an arrival, then 3 within 43 ms) stamps the requests
   * that reached it meanwhile together, and the busiest window reads 12. The fleet tests keep
   * their destination in a JVM of its own.
   */
  @Test
  void theApplicationsRestClientHoldsTheCeilingAndShowsPacersMeters() throws Exception {
    try (ArrivalCounter destination = new ArrivalCounter();
        ConfigurableApplicationContext app = start(destination)) {
      RestClient client = app.getBean(RestClient.class);
      client.get().uri(destination.url("/first")).retrieve().body(String.class);
      fetchAll(client, destination);
      Timeline t = destination.timeline();
      System.out.printf("sample application, paced: %s; after the first: %s%n", t,
          destination.timelineAfterFirst());
      assertThat(t.size()).isEqualTo(REQUESTS + 1);
      assertThat(t.peakOneSecondWindow()).as("busiest 1-s window, %s", t)
          .isLessThanOrEqualTo((int) CEILING + 1);
      // The rate of the concurrent requests: the first one went alone, and waited for nobody.
      Timeline concurrent = destination.timelineAfterFirst();
      assertThat(concurrent.aggregateRatePerSecond()).as("rate not collapsed, %s", concurrent)
          .isGreaterThanOrEqualTo(CEILING * 0.95);

      MeterRegistry meters = app.getBean(MeterRegistry.class);
      assertThat(meters.get("pacer.acquire.wait").tag("destination", "sample").timer().count())
          .as("turns timed").isEqualTo(REQUESTS + 1);
      assertThat(meters.get("pacer.reservations").tag("destination", "sample")
          .tag("outcome", "shared").counter().count()).isEqualTo(REQUESTS + 1);

    }
  }

  /**
   * A 429 goes back to the application as Spring's own exception, and the destination's limiter has
   * already backed off; the meters count it.
   */
  @Test
  void aRateAnswerReachesTheApplicationAndBacksTheDestinationOff() throws Exception {
    try (ArrivalCounter destination = new ArrivalCounter().answering(n -> n == 1 ? 429 : 200, "1");
        ConfigurableApplicationContext app = start(destination)) {
      RestClient client = app.getBean(RestClient.class);
      assertThatThrownBy(() -> client.get().uri(destination.url("/busy")).retrieve()
          .body(String.class)).isInstanceOf(HttpClientErrorException.TooManyRequests.class);
      DestinationLimiter limiter = app.getBean(PacerDestinations.class).limiter("sample");
      assertThat(limiter.backoffMultiplier()).isEqualTo(2);
      assertThat(app.getBean(MeterRegistry.class).get("pacer.throttled")
          .tag("destination", "sample").counter().count()).isEqualTo(1);
    }
  }

  /** The same application with the starter's RestClient pacing switched off: the test can fail. */
  @Test
  void withoutPacingTheSameApplicationBreaksTheCeiling() throws Exception {
    try (ArrivalCounter destination = new ArrivalCounter();
        ConfigurableApplicationContext app = start(destination, "pacer.rest-client.enabled=false")) {
      fetchAll(app.getBean(RestClient.class), destination);
      Timeline t = destination.timeline();
      System.out.printf("sample application, unpaced: %s%n", t);
      assertThat(t.size()).isEqualTo(REQUESTS);
      assertThat(t.peakOneSecondWindow()).isGreaterThan((int) CEILING + 1);
    }
  }
}
