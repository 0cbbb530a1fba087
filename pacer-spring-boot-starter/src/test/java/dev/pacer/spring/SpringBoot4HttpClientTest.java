package dev.pacer.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.micrometer.PacerMetrics;
import dev.pacer.spi.Cursor;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.http.client.HttpClientSettings;
import org.springframework.boot.http.client.HttpRedirects;
import org.springframework.boot.restclient.RestClientCustomizer;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.web.client.RestClient;

/**
 * The HTTP client auto-configuration with Spring Boot 4's own types: its HTTP client settings reach
 * the paced client, and its {@code RestClientCustomizer} is the one made, left out without {@code
 * RestClient}, and backed off for the application's own.
 */
class SpringBoot4HttpClientTest {

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
  void springBootsHttpClientSettingsReachThePacedClient() {
    runner
        .withBean(
            HttpClientSettings.class,
            () ->
                HttpClientSettings.defaults()
                    .withConnectTimeout(Duration.ofMillis(1234))
                    .withRedirects(HttpRedirects.DONT_FOLLOW))
        .run(
            context -> {
              PacedHttpClient client = context.getBean(PacedHttpClient.class);
              assertThat(client.followRedirects()).isEqualTo(HttpClient.Redirect.NEVER);
              assertThat(client.delegate().connectTimeout()).contains(Duration.ofMillis(1234));
            });
  }

  @Test
  void theCustomizerIsSpringBoot4sAndLeftOutWithoutRestClient() {
    runner.run(context -> assertThat(context).hasSingleBean(RestClientCustomizer.class));
    runner
        .withClassLoader(new FilteredClassLoader(RestClient.class))
        .run(
            context ->
                assertThat(context)
                    .doesNotHaveBean(RestClientCustomizer.class)
                    .hasSingleBean(PacedHttpClient.class));
  }

  @Test
  void eachBacksOffForTheApplicationsOwn() {
    PacedHttpClient own =
        PacedHttpClient.builder(HttpClient.newBuilder().build(), uri -> Optional.empty()).build();
    RestClientCustomizer ownCustomizer = builder -> {};
    runner
        .withBean(PacedHttpClient.class, () -> own)
        .withBean("pacerRestClientCustomizer", RestClientCustomizer.class, () -> ownCustomizer)
        .withBean(
            PacerMetrics.class, () -> new PacerMetrics(new LimiterRegistry(new LocalCursor())))
        .run(
            context -> {
              assertThat(context.getBean(PacedHttpClient.class)).isSameAs(own);
              assertThat(context.getBean("pacerRestClientCustomizer")).isSameAs(ownCustomizer);
              assertThat(context).hasSingleBean(PacerMetrics.class);
            });
  }
}
