package dev.pacer.spring;

import dev.pacer.LimiterRegistry;
import dev.pacer.jdkhttp.PacedHttpClient;
import java.net.http.HttpClient;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.http.client.HttpClientSettings;
import org.springframework.boot.http.client.HttpRedirects;
import org.springframework.boot.http.client.JdkHttpClientBuilder;
import org.springframework.boot.restclient.RestClientCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.client.JdkClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

/**
 * Pacing the application's HTTP clients: a {@link PacedHttpClient} bean, which paces each request
 * (and each redirect hop) by the destination whose {@code hosts} hold the request's host and sends
 * requests to any other host unpaced; and, when Spring's {@code RestClient} is present, a {@link
 * RestClientCustomizer} that gives every {@code RestClient.Builder} Spring Boot hands out a {@link
 * JdkClientHttpRequestFactory} on that client (Spring's JDK requests go through its {@code
 * sendAsync}, which waits for the turn without a thread of Pacer's). Turns and the classification
 * of answers are the paced client's own ({@link dev.pacer.DestinationLimiter#noteAnswer}): a 429
 * comes back to the caller as a 429 (Spring's {@code RestClient} then throws its usual exception),
 * and the destination has already backed off; after a 403 the next request to the destination
 * throws {@link dev.pacer.LockedOutException} before anything is sent.
 *
 * <p>The client honours Spring Boot's HTTP client settings ({@code spring.http.clients.*}): connect
 * timeout, SSL bundle and redirects for the client itself (redirects are followed by the paced
 * client, one turn per hop, never by the JDK's client inside one turn), and the read timeout for
 * each answer (the paced client's {@code answerTimeout}, from the request's turn; with none set,
 * the paced client's default, {@link PacedHttpClient#DEFAULT_ANSWER_TIMEOUT}) and its body (the
 * request factory's). This class is Spring Boot 4's; {@code pacer-spring-boot3-starter} has Spring
 * Boot 3.5's, which reads the same settings from that line's types. {@code
 * pacer.rest-client.enabled=false} leaves {@code RestClient} alone; the {@link PacedHttpClient}
 * bean stays, for the application to use as it likes.
 *
 * <p><b>Warm-up at start.</b> Once every singleton exists, the client is warmed up ({@link
 * PacedHttpClient#warmUp}: a GET through each of its paths to a throwaway server on 127.0.0.1, no
 * turn, nothing sent to any destination), unless {@code pacer.http.warm-up=false}. At start,
 * because the application's first request may come from anywhere (a request handler, a scheduled
 * job, a runner), with no later moment the starter could hook before it, and because a cold
 * client's first requests load its classes after their turns have begun, so that requests granted
 * turns meanwhile reach the destination together; it costs the start-up once (docs/integrations.md
 * gives the figure). The destinations' host names are not resolved at start: a host that does not
 * resolve yet would hold up the start by the resolver's timeout, and the JVM keeps an answer only
 * 30 s by default; nor is the TLS stack loaded for them. An application whose first requests go to
 * an https destination at once can call {@code warmUp(destinationUrl)} on the bean itself. Turn it
 * off where the application sends no request soon after it starts (a test that never sends).
 */
@AutoConfiguration(
    after = PacerAutoConfiguration.class,
    beforeName = "org.springframework.boot.restclient.autoconfigure.RestClientAutoConfiguration")
public class PacerHttpClientAutoConfiguration {

  /**
   * With Spring Boot's HTTP client settings: its connect timeout, SSL and redirect policy. Spring
   * Boot 3.5 has classes of the same names with another API, so the condition names the module that
   * only Spring Boot 4 has.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(
      name = "org.springframework.boot.http.client.autoconfigure.HttpClientAutoConfiguration")
  static class WithBootSettings {

    @Bean
    @ConditionalOnMissingBean
    PacedHttpClient pacerHttpClient(
        LimiterRegistry registry,
        PacerDestinations destinations,
        ObjectProvider<HttpClientSettings> settings) {
      HttpClientSettings s = settings.getIfAvailable(HttpClientSettings::defaults);
      HttpClient delegate =
          new JdkHttpClientBuilder()
              .build(s.withReadTimeout(null).withRedirects(HttpRedirects.DONT_FOLLOW));
      return HttpClientPacing.pacedClient(
          registry,
          destinations,
          delegate,
          s.redirects() != HttpRedirects.DONT_FOLLOW,
          s.readTimeout());
    }
  }

  /** Without them (no Spring Boot HTTP client module): the JDK's defaults, redirects followed. */
  @Bean
  @ConditionalOnMissingBean
  PacedHttpClient pacerHttpClient(LimiterRegistry registry, PacerDestinations destinations) {
    return HttpClientPacing.pacedClient(
        registry,
        destinations,
        HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build(),
        true,
        null);
  }

  /** The warm-up at start (see the class comment). */
  @Bean
  @ConditionalOnBooleanProperty(name = "pacer.http.warm-up", matchIfMissing = true)
  SmartInitializingSingleton pacerHttpClientWarmUp(ObjectProvider<PacedHttpClient> client) {
    return HttpClientPacing.warmUpAtStart(client);
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({RestClient.class, RestClientCustomizer.class})
  @ConditionalOnBooleanProperty(name = "pacer.rest-client.enabled", matchIfMissing = true)
  static class RestClientPacing {

    @Bean
    @ConditionalOnMissingBean(name = "pacerRestClientCustomizer")
    RestClientCustomizer pacerRestClientCustomizer(
        PacedHttpClient client, ObjectProvider<HttpClientSettings> settings) {
      Duration readTimeout = settings.getIfAvailable(HttpClientSettings::defaults).readTimeout();
      return builder ->
          builder.requestFactory(HttpClientPacing.requestFactory(client, readTimeout));
    }
  }
}
