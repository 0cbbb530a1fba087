package dev.pacer.http;

import dev.pacer.LimiterLookup;
import dev.pacer.PacedHttpClient;
import dev.pacer.http.hc5.PacingExecChainHandler;
import dev.pacer.http.okhttp.PacingInterceptor;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/** The three paced clients, each as a GET that returns the final status and body, redirects followed. */
enum Client {
  JDK {
    @Override
    Getter open(Optional<LimiterLookup> limiters) {
      HttpClient bare = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER)
          .version(HttpClient.Version.HTTP_1_1).build();
      HttpClient client = limiters.isEmpty() ? bare
          : PacedHttpClient.builder(bare, limiters.get())
              .followRedirects(HttpClient.Redirect.NORMAL).build();
      return new Getter() {
        @Override
        public Answer get(URI uri) throws IOException, InterruptedException {
          HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri).build(),
              HttpResponse.BodyHandlers.ofString());
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
    Getter open(Optional<LimiterLookup> limiters) {
      OkHttpClient.Builder builder = new OkHttpClient.Builder();
      limiters.ifPresent(l -> builder.addNetworkInterceptor(new PacingInterceptor(l)));
      OkHttpClient client = builder.build();
      return new Getter() {
        @Override
        public Answer get(URI uri) throws IOException {
          try (Response r = client.newCall(new Request.Builder().url(uri.toURL()).build())
              .execute()) {
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
    Getter open(Optional<LimiterLookup> limiters) {
      CloseableHttpClient client = limiters.isEmpty() ? HttpClients.createDefault()
          : new PacingExecChainHandler(limiters.get()).addTo(HttpClients.custom()).build();
      return new Getter() {
        @Override
        public Answer get(URI uri) throws IOException {
          return client.execute(new HttpGet(uri), r -> new Answer(r.getCode(),
              r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity(), StandardCharsets.UTF_8)));
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

  /** A GET's final answer. */
  record Answer(int status, String body) {}

  /** Sends GETs through one client. */
  interface Getter extends AutoCloseable {
    Answer get(URI uri) throws Exception;

    /** The integration's warm-up ({@code dev.pacer.WarmUp}); the bare clients have none. */
    void warmUp(URI destination) throws InterruptedException;
  }

  /** A client paced by {@code limiters}. */
  Getter open(LimiterLookup limiters) {
    return open(Optional.of(limiters));
  }

  /** The same client without pacing: the baseline of the overhead measurement. */
  Getter bare() {
    return open(Optional.empty());
  }

  abstract Getter open(Optional<LimiterLookup> limiters);
}
