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
import org.springframework.boot.http.client.ClientHttpRequestFactorySettings;
import org.springframework.boot.http.client.HttpClientSettings;
import org.springframework.boot.http.client.HttpRedirects;
import org.springframework.boot.http.client.JdkHttpClientBuilder;
import org.springframework.boot.web.client.RestClientCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.client.JdkClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

/**
 * Pacing the application's HTTP clients on Spring Boot 3.5: a {@link PacedHttpClient} bean, which
 * paces each request (and each redirect hop) by the destination whose {@code hosts} hold the
 * request's host and sends requests to any other host unpaced; and, when Spring's {@code
 * RestClient} is present, a {@link RestClientCustomizer} that gives every {@code
 * RestClient.Builder} Spring Boot hands out a {@link JdkClientHttpRequestFactory} on that client. A
 * 429 comes back to the caller as a 429, after the destination has backed off; after a 403 the next
 * request to the destination throws {@link dev.pacer.LockedOutException} before anything is sent.
 *
 * <p>The client honours Spring Boot's HTTP client settings ({@code spring.http.client.*}, read from
 * its {@link ClientHttpRequestFactorySettings}): connect timeout, SSL bundle and redirects for the
 * client itself (redirects are followed by the paced client, one turn per hop, never by the JDK's
 * client inside one turn), and the read timeout for each answer (the paced client's {@code
 * answerTimeout}; with none set, {@link PacedHttpClient#DEFAULT_ANSWER_TIMEOUT}) and its body (the
 * request factory's). {@code pacer.rest-client.enabled=false} leaves {@code RestClient} alone; the
 * {@link PacedHttpClient} bean stays.
 *
 * <p>Once every singleton exists the client is warmed up ({@link PacedHttpClient#warmUp}: no turn,
 * nothing sent to any destination), unless {@code pacer.http.warm-up=false}: a cold client's first
 * requests load its classes after their turns have begun, so that requests granted turns meanwhile
 * would reach the destination together. docs/integrations.md says what it costs and leaves out.
 */
@AutoConfiguration(
    after = PacerAutoConfiguration.class,
    beforeName = "org.springframework.boot.autoconfigure.web.client.RestClientAutoConfiguration")
public class PacerHttpClientAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  PacedHttpClient pacerHttpClient(
      LimiterRegistry registry,
      PacerDestinations destinations,
      ObjectProvider<ClientHttpRequestFactorySettings> settings) {
    ClientHttpRequestFactorySettings s =
        settings.getIfAvailable(ClientHttpRequestFactorySettings::defaults);
    HttpClient delegate =
        new JdkHttpClientBuilder()
            .build(
                new HttpClientSettings(
                    HttpRedirects.DONT_FOLLOW, s.connectTimeout(), null, s.sslBundle()));
    return HttpClientPacing.pacedClient(
        registry,
        destinations,
        delegate,
        s.redirects() != ClientHttpRequestFactorySettings.Redirects.DONT_FOLLOW,
        s.readTimeout());
  }

  /** The warm-up at start (see the class comment). */
  @Bean
  @ConditionalOnBooleanProperty(name = "pacer.http.warm-up", matchIfMissing = true)
  SmartInitializingSingleton pacerHttpClientWarmUp(ObjectProvider<PacedHttpClient> client) {
    return HttpClientPacing.warmUpAtStart(client);
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(RestClient.class)
  @ConditionalOnBooleanProperty(name = "pacer.rest-client.enabled", matchIfMissing = true)
  static class RestClientPacing {

    @Bean
    @ConditionalOnMissingBean(name = "pacerRestClientCustomizer")
    RestClientCustomizer pacerRestClientCustomizer(
        PacedHttpClient client, ObjectProvider<ClientHttpRequestFactorySettings> settings) {
      Duration readTimeout =
          settings.getIfAvailable(ClientHttpRequestFactorySettings::defaults).readTimeout();
      return builder ->
          builder.requestFactory(HttpClientPacing.requestFactory(client, readTimeout));
    }
  }
}
