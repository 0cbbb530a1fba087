package dev.pacer.http;

import dev.pacer.LimiterLookup;
import dev.pacer.http.hc5.PacingExecChainHandler;
import dev.pacer.http.hc5.TestHandler;
import dev.pacer.http.okhttp.PacingInterceptor;
import dev.pacer.http.okhttp.TestInterceptor;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.jdkhttp.TestPacedClient;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.http.io.support.ClassicRequestBuilder;

/**
 * The three paced clients, each sending a request and returning the final status and body,
 * redirects followed.
 */
enum Client {
  JDK {
    @Override
    Getter open(Optional<LimiterLookup> limiters, AddressPolicy addresses) {
      HttpClient bare =
          HttpClient.newBuilder()
              .followRedirects(HttpClient.Redirect.NEVER)
              .version(HttpClient.Version.HTTP_1_1)
              .build();
      HttpClient client =
          limiters.isEmpty()
              ? bare
              : TestPacedClient.judgedBy(PacedHttpClient.builder(bare, limiters.get()), addresses)
                  .followRedirects(HttpClient.Redirect.NORMAL)
                  .build();
      return new Getter() {
        @Override
        public Answer send(Sent sent) throws IOException, InterruptedException {
          HttpRequest.Builder request =
              HttpRequest.newBuilder(sent.uri())
                  .method(
                      sent.method(),
                      sent.body()
                          .map(HttpRequest.BodyPublishers::ofString)
                          .orElse(HttpRequest.BodyPublishers.noBody()));
          sent.headers().forEach(request::header);
          HttpResponse<String> r =
              client.send(request.build(), HttpResponse.BodyHandlers.ofString());
          return new Answer(r.statusCode(), r.body());
        }

        @Override
        public void warmUp(URI destination) throws InterruptedException {
          if (client instanceof PacedHttpClient paced) {
            paced.warmUp(destination);
          }
        }

        @Override
        public void close() {}
      };
    }
  },
  OKHTTP {
    @Override
    Getter open(Optional<LimiterLookup> limiters, AddressPolicy addresses) {
      OkHttpClient.Builder builder = new OkHttpClient.Builder();
      limiters.ifPresent(
          l -> builder.addNetworkInterceptor(TestInterceptor.judgedBy(l, addresses)));
      OkHttpClient client = builder.build();
      return new Getter() {
        @Override
        public Answer send(Sent sent) throws IOException {
          Request.Builder request =
              new Request.Builder()
                  .url(sent.uri().toURL())
                  .method(
                      sent.method(),
                      sent.body()
                          .map(
                              body ->
                                  RequestBody.create(
                                      body, MediaType.get("text/plain; charset=utf-8")))
                          .orElse(null));
          sent.headers().forEach(request::header);
          try (Response r = client.newCall(request.build()).execute()) {
            return new Answer(r.code(), r.body().string());
          }
        }

        @Override
        public void warmUp(URI destination) throws InterruptedException {
          PacingInterceptor.warmUp(client, destination);
        }

        @Override
        public void close() {
          client.dispatcher().executorService().shutdown();
          client.connectionPool().evictAll();
        }
      };
    }
  },
  APACHE {
    @Override
    Getter open(Optional<LimiterLookup> limiters, AddressPolicy addresses) {
      CloseableHttpClient client =
          limiters.isEmpty()
              ? HttpClients.createDefault()
              : TestHandler.judgedBy(limiters.get(), addresses).addTo(HttpClients.custom()).build();
      return new Getter() {
        @Override
        public Answer send(Sent sent) throws IOException {
          ClassicRequestBuilder request =
              ClassicRequestBuilder.create(sent.method()).setUri(sent.uri());
          sent.body()
              .ifPresent(
                  body ->
                      request.setEntity(
                          new StringEntity(
                              body, ContentType.TEXT_PLAIN.withCharset(StandardCharsets.UTF_8))));
          sent.headers().forEach(request::addHeader);
          return client.execute(
              request.build(),
              r ->
                  new Answer(
                      r.getCode(),
                      r.getEntity() == null
                          ? ""
                          : EntityUtils.toString(r.getEntity(), StandardCharsets.UTF_8)));
        }

        @Override
        public void warmUp(URI destination) throws InterruptedException {
          PacingExecChainHandler.warmUp(client, destination);
        }

        @Override
        public void close() throws IOException {
          client.close();
        }
      };
    }
  };

  /** A request to send: its method, URL, headers and body. */
  record Sent(String method, URI uri, Map<String, String> headers, Optional<String> body) {}

  /** A request's final answer. */
  record Answer(int status, String body) {}

  /** Sends requests through one client. */
  interface Getter extends AutoCloseable {
    Answer send(Sent request) throws Exception;

    /** A GET without headers. */
    default Answer get(URI uri) throws Exception {
      return send(new Sent("GET", uri, Map.of(), Optional.empty()));
    }

    /** The integration's warm-up ({@code dev.pacer.http.WarmUp}); the bare clients have none. */
    void warmUp(URI destination) throws InterruptedException;
  }

  /** A client paced by {@code limiters}, its redirects judged by the system's address policy. */
  Getter open(LimiterLookup limiters) {
    return open(Optional.of(limiters), AddressPolicy.system());
  }

  /** A client paced by {@code limiters}, its redirects judged by {@code addresses}. */
  Getter open(LimiterLookup limiters, AddressPolicy addresses) {
    return open(Optional.of(limiters), addresses);
  }

  /** The same client without pacing: the baseline of the overhead measurement. */
  Getter bare() {
    return open(Optional.empty(), AddressPolicy.system());
  }

  abstract Getter open(Optional<LimiterLookup> limiters, AddressPolicy addresses);
}
