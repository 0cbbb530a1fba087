package dev.pacer.spring;

import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.jdkhttp.PacedHttpClient;
import java.net.http.HttpClient;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.http.client.JdkClientHttpRequestFactory;

/**
 * What {@code PacerHttpClientAutoConfiguration} does on every Spring Boot line, given the line's
 * HTTP client settings as plain values: each line reads them from types of its own (Spring Boot 4's
 * {@code HttpClientSettings}, 3.5's {@code ClientHttpRequestFactorySettings}), and names its own
 * {@code RestClientCustomizer}.
 */
final class HttpClientPacing {

  private HttpClientPacing() {}

  /**
   * The paced client on {@code delegate}, which must not follow redirects itself: the paced client
   * follows them, one turn per hop, when {@code followRedirects}. A null {@code answerTimeout}
   * (Spring Boot's "no read timeout set") keeps {@link PacedHttpClient#DEFAULT_ANSWER_TIMEOUT}.
   */
  static PacedHttpClient pacedClient(
      LimiterRegistry registry,
      PacerDestinations destinations,
      HttpClient delegate,
      boolean followRedirects,
      Duration answerTimeout) {
    PacedHttpClient.Builder paced =
        PacedHttpClient.builder(
                delegate, LimiterLookup.byHost(registry, destinations::destinationForHost))
            .followRedirects(
                followRedirects ? HttpClient.Redirect.NORMAL : HttpClient.Redirect.NEVER);
    if (answerTimeout != null) {
      paced.answerTimeout(answerTimeout);
    }
    return paced.build();
  }

  /** The request factory a paced {@code RestClient.Builder} gets: its body read timeout, if set. */
  static JdkClientHttpRequestFactory requestFactory(PacedHttpClient client, Duration readTimeout) {
    JdkClientHttpRequestFactory factory = new JdkClientHttpRequestFactory(client);
    if (readTimeout != null) {
      factory.setReadTimeout(readTimeout);
    }
    return factory;
  }

  /** The warm-up at start (see {@code PacerHttpClientAutoConfiguration}). */
  static SmartInitializingSingleton warmUpAtStart(ObjectProvider<PacedHttpClient> client) {
    return () ->
        client.ifAvailable(
            paced -> {
              try {
                paced.warmUp();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
  }
}
