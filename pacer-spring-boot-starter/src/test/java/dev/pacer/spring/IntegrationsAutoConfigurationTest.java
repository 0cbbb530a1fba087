package dev.pacer.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.LocalCursor;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.micrometer.PacerMetrics;
import dev.pacer.spi.Cursor;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.http.HttpClient;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The paced HTTP client, the {@code RestClient} customizer and the meters: made when their classes
 * are present, left out when not, switched off by property, and warmed up, on every Spring Boot
 * line; {@code SpringBoot4HttpClientTest} has what names Spring Boot 4's own types. (What they do
 * to requests and meters is {@link SampleApplicationTest}'s subject.)
 */
class IntegrationsAutoConfigurationTest {

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  PacerAutoConfiguration.class,
                  PacerHttpClientAutoConfiguration.class,
                  PacerMetricsAutoConfiguration.class))
          .withBean(Cursor.class, LocalCursor::new)
          .withPropertyValues("pacer.destinations[api.example.com].rate-per-second=5");

  @Test
  void withEverythingPresentEachIntegrationIsMade() {
    runner.run(
        context -> {
          assertThat(context)
              .hasSingleBean(PacedHttpClient.class)
              .hasBean("pacerRestClientCustomizer")
              .hasSingleBean(PacerMetrics.class);
          PacedHttpClient client = context.getBean(PacedHttpClient.class);
          assertThat(client.followRedirects())
              .as("followed by the paced client, hop by hop")
              .isEqualTo(HttpClient.Redirect.NORMAL);
          assertThat(client.delegate().followRedirects()).isEqualTo(HttpClient.Redirect.NEVER);
        });
  }

  @Test
  void theRestClientCustomizerIsSwitchedOffByProperty() {
    runner
        .withPropertyValues("pacer.rest-client.enabled=false")
        .run(
            context ->
                assertThat(context)
                    .doesNotHaveBean("pacerRestClientCustomizer")
                    .hasSingleBean(PacedHttpClient.class));

    runner
        .withClassLoader(new FilteredClassLoader(PacerMetrics.class))
        .run(context -> assertThat(context).doesNotHaveBean("pacerMetrics"));
    runner
        .withClassLoader(new FilteredClassLoader(MeterBinder.class))
        .run(context -> assertThat(context).doesNotHaveBean("pacerMetrics"));
  }

  @Test
  void theClientIsWarmedUpAtStartUnlessSwitchedOff() {
    AtomicInteger tasks = new AtomicInteger();
    ExecutorService threads = Executors.newCachedThreadPool();
    Executor counting =
        task -> {
          tasks.incrementAndGet();
          threads.execute(task);
        };
    Supplier<PacedHttpClient> own =
        () ->
            PacedHttpClient.builder(
                    HttpClient.newBuilder().executor(counting).build(), uri -> Optional.empty())
                .build();
    try {
      runner
          .withBean(PacedHttpClient.class, own)
          .run(
              context ->
                  assertThat(tasks)
                      .as("tasks of the warm-up's sendAsync, on the client's" + " executor")
                      .hasPositiveValue());
      tasks.set(0);
      runner
          .withBean(PacedHttpClient.class, own)
          .withPropertyValues("pacer.http.warm-up=false")
          .run(
              context -> {
                assertThat(context).doesNotHaveBean("pacerHttpClientWarmUp");
                assertThat(tasks).hasValue(0);
              });
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void theMetersBindToAMeterRegistry() {
    runner.run(
        context -> {
          SimpleMeterRegistry meters = new SimpleMeterRegistry();
          context.getBean(PacerMetrics.class).bindTo(meters);
          context.getBean(PacerDestinations.class).limiter("api.example.com").acquire().close();
          assertThat(
                  meters
                      .get("pacer.acquire.wait")
                      .tag("destination", "api.example.com")
                      .timer()
                      .count())
              .isEqualTo(1);
        });
  }
}
