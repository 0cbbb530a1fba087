package dev.pacer.examples;

import dev.pacer.Destination;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.http.hc5.PacingExecChainHandler;
import dev.pacer.http.okhttp.PacingInterceptor;
import dev.pacer.jdkhttp.PacedHttpClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.io.entity.EntityUtils;

/** Each HTTP client paced by host: README's quick start and docs/integrations.md. */
final class HttpClientExamples {

  private HttpClientExamples() {}

  /** The ceilings by host that every example paces with. */
  static LimiterLookup byHost(LimiterRegistry registry, String host, double ratePerSecond) {
    // tag::lookup[]
    Map<String, Destination> destinations =
        Map.of(
            host, Destination.builder(host).ratePerSecond(ratePerSecond).maxConcurrency(4).build());
    LimiterLookup limiters =
        LimiterLookup.byHost(
            registry,
            h -> Optional.ofNullable(destinations.get(h))); // hosts not listed are not paced
    // end::lookup[]
    return limiters;
  }

  static int jdk(LimiterLookup limiters, List<URI> uris) throws Exception {
    int ok = 0;
    // tag::jdk[]
    PacedHttpClient client =
        PacedHttpClient.builder(
                HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build(),
                limiters)
            .followRedirects(HttpClient.Redirect.NORMAL) // followed here: a turn per hop
            .build();
    client.warmUp(uris.get(0)); // a cold client's first requests leave late: pay it before
    for (URI uri : uris) {
      HttpResponse<String> r =
          client.send(
              HttpRequest.newBuilder(uri).build(),
              HttpResponse.BodyHandlers.ofString()); // waits for its turn; 429s slow the fleet
      ok += r.statusCode() == 200 ? 1 : 0;
    }
    // end::jdk[]
    return ok;
  }

  static int okhttp(LimiterLookup limiters, List<URI> uris) throws Exception {
    int ok = 0;
    // tag::okhttp[]
    OkHttpClient client =
        new OkHttpClient.Builder()
            .addNetworkInterceptor(new PacingInterceptor(limiters)) // network: sees every hop
            .build();
    PacingInterceptor.warmUp(client, uris.get(0)); // a cold client's first requests leave late
    for (URI uri : uris) {
      try (Response r =
          client.newCall(new Request.Builder().url(uri.toString()).build()).execute()) {
        ok += r.code() == 200 ? 1 : 0;
        r.body().string(); // the permit is held until the body is read or closed
      }
    }
    // end::okhttp[]
    client.dispatcher().executorService().shutdown();
    client.connectionPool().evictAll();
    return ok;
  }

  static int apache(LimiterLookup limiters, List<URI> uris) throws Exception {
    int ok = 0;
    // tag::apache[]
    try (CloseableHttpClient client =
        new PacingExecChainHandler(limiters)
            .addTo(HttpClients.custom()) // before PROTOCOL: after redirects and retries
            .build()) {
      PacingExecChainHandler.warmUp(client, uris.get(0)); // a cold client's first requests too
      for (URI uri : uris) {
        ok +=
            client.execute(
                new HttpGet(uri),
                r -> {
                  EntityUtils.consume(r.getEntity()); // releases the permit with the connection
                  return r.getCode() == 200 ? 1 : 0;
                });
      }
    }
    // end::apache[]
    return ok;
  }
}
