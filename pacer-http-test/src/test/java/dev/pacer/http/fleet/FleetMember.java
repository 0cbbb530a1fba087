package dev.pacer.http.fleet;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.http.hc5.PacingExecChainHandler;
import dev.pacer.http.okhttp.PacingInterceptor;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.spi.Cursor;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.io.support.ClassicRequestBuilder;

/**
 * One process of {@code ThreeClientsOneCursorTest}'s fleet, written as an application would be,
 * with Pacer's public API only (this package sees nothing of Pacer's but what it exports): its own
 * cursor and registry, one of the three clients (the JDK's through {@link PacedHttpClient}, OkHttp
 * through {@link PacingInterceptor}, Apache's through {@link PacingExecChainHandler}), warmed up
 * with the integration's documented {@code warmUp}, and one paced request to {@value #OPENING_PATH}
 * under the door's URL as the application's first. It prints READY, waits for GO on stdin, sends
 * GETs to {@code <doorUrl>/ok/<client>} for the run's length one after another, and prints {@code
 * SENT <n> LATE <n>}: the requests sent and the turns its limiter gave up as late during the run.
 *
 * <p>Arguments: {@code JDK|OKHTTP|APACHE shared|local jdbcUrl destination rate processes doorUrl
 * seconds}.
 */
public final class FleetMember {

  /** The path of the request that opens the connection before the run. */
  public static final String OPENING_PATH = "/open";

  /** One client's way of sending a GET and returning its status. */
  private interface Getter {
    int get(URI uri) throws Exception;
  }

  public static void main(String[] args) throws Exception {
    String kind = args[0];
    boolean shared = args[1].equals("shared");
    Destination destination =
        Destination.builder(args[3])
            .ratePerSecond(Double.parseDouble(args[4]))
            .maxConcurrency(1)
            .maxFetchingProcesses(Integer.parseInt(args[5]))
            .build();
    URI door = URI.create(args[6]);
    long runNanos = Duration.ofMillis(Math.round(Double.parseDouble(args[7]) * 1000)).toNanos();

    Cursor cursor =
        shared
            ? new PostgresCursor(PostgresCursorConfig.forUrl(args[2]).build())
            : new LocalCursor();
    if (cursor instanceof PostgresCursor pg && !pg.connect(Duration.ofSeconds(30))) {
      throw new IllegalStateException("could not connect to the database");
    }
    DestinationLimiter limiter = new LimiterRegistry(cursor).limiter(destination);
    Getter client = client(kind, limiter, door);
    expectOk(client.get(URI.create(args[6] + OPENING_PATH)), OPENING_PATH);

    System.out.println("READY");
    System.out.flush();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    if (!"GO".equals(in.readLine())) {
      throw new IllegalStateException("expected GO");
    }
    long lateBefore = limiter.lateTurnsSkipped();
    URI target = URI.create(args[6] + "/ok/" + kind);
    long end = System.nanoTime() + runNanos;
    long sent = 0;
    while (System.nanoTime() - end < 0) {
      expectOk(client.get(target), target.getPath());
      sent++;
    }
    System.out.println("SENT " + sent + " LATE " + (limiter.lateTurnsSkipped() - lateBefore));
    System.out.flush();
    if (cursor instanceof PostgresCursor pg) {
      pg.close();
    }
    System.exit(0);
  }

  private static Getter client(String kind, DestinationLimiter limiter, URI door)
      throws InterruptedException {
    switch (kind) {
      case "JDK" -> {
        PacedHttpClient client =
            PacedHttpClient.of(
                HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(5))
                    .build(),
                limiter);
        client.warmUp(door);
        return uri ->
            client
                .send(
                    HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.discarding())
                .statusCode();
      }
      case "OKHTTP" -> {
        OkHttpClient client =
            new OkHttpClient.Builder().addNetworkInterceptor(PacingInterceptor.of(limiter)).build();
        PacingInterceptor.warmUp(client, door);
        return uri -> {
          try (Response r =
              client.newCall(new Request.Builder().url(uri.toURL()).build()).execute()) {
            return r.code();
          }
        };
      }
      case "APACHE" -> {
        CloseableHttpClient client =
            PacingExecChainHandler.of(limiter).addTo(HttpClients.custom()).build();
        PacingExecChainHandler.warmUp(client, door);
        return uri ->
            client.execute(
                ClassicRequestBuilder.get(uri).build(),
                r -> {
                  if (r.getEntity() != null) {
                    r.getEntity().getContent().readAllBytes();
                  }
                  return r.getCode();
                });
      }
      default -> throw new IllegalArgumentException("no client " + kind);
    }
  }

  private static void expectOk(int status, String path) throws IOException {
    if (status != 200) {
      throw new IOException("the door answered " + status + " to " + path);
    }
  }
}
