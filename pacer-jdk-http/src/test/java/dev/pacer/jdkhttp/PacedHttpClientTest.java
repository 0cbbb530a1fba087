package dev.pacer.jdkhttp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.testing.FakeTime;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the decorator adds to the JDK's client, against a local server, paced on a fake clock. The
 * three clients' shared behaviour (a turn per redirect hop, 429, 403) is in pacer-http-test's
 * PerClientTest; this is what only the decorator has.
 */
class PacedHttpClientTest {

  private final FakeTime time = new FakeTime();
  private final List<String> arrivals = new CopyOnWriteArrayList<>();
  private HttpServer server;
  private DestinationLimiter limiter;
  private final HttpClient bare =
      HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        exchange -> {
          arrivals.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath());
          exchange.getRequestBody().readAllBytes();
          String path = exchange.getRequestURI().getPath();
          int status = 200;
          if (path.startsWith("/see-other")) {
            status = 303;
            exchange.getResponseHeaders().add("Location", "/landed");
          }
          // 8 MiB: more than the client buffers ahead of a reader who has not read yet.
          byte[] body =
              path.equals("/big")
                  ? new byte[8 << 20]
                  : ("body of " + path).getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(status, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    server.start();
    limiter =
        new LimiterRegistry(new LocalCursor(time), time)
            .limiter(
                Destination.builder("decorator-test").ratePerSecond(10).maxConcurrency(1).build());
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
  }

  @Test
  void aDelegateThatFollowsRedirectsItselfIsRefusedNamingItsPolicy() {
    HttpClient following =
        HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build();
    assertThatThrownBy(() -> PacedHttpClient.of(following, limiter))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("follows NORMAL")
        .hasMessageContaining("Redirect.NEVER");
  }

  @Test
  void byDefaultARedirectIsReturnedAsItIsAfterOneTurn() throws Exception {
    HttpResponse<String> response =
        PacedHttpClient.of(bare, limiter)
            .send(
                HttpRequest.newBuilder(uri("/see-other")).build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).isEqualTo(303);
    assertThat(arrivals).containsExactly("GET /see-other");
    assertThat(time.sleepsMillis()).containsExactly(0L);
  }

  @Test
  void aSeeOtherAfterAPostIsFollowedWithAGetAndItsOwnTurn() throws Exception {
    PacedHttpClient client =
        PacedHttpClient.builder(bare, LimiterLookup.only(limiter))
            .followRedirects(HttpClient.Redirect.NORMAL)
            .build();
    HttpResponse<String> response =
        client.send(
            HttpRequest.newBuilder(uri("/see-other"))
                .POST(HttpRequest.BodyPublishers.ofString("form"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(response.body()).isEqualTo("body of /landed");
    assertThat(response.uri()).isEqualTo(uri("/landed"));
    assertThat(arrivals).containsExactly("POST /see-other", "GET /landed");
    assertThat(time.sleepsMillis()).containsExactly(0L, 100L);
    assertThat(client.followRedirects()).isEqualTo(HttpClient.Redirect.NORMAL);
  }

  @Test
  void aStreamedBodyHoldsThePermitUntilItIsReceivedOrClosed() throws Exception {
    PacedHttpClient client = PacedHttpClient.of(bare, limiter);
    HttpResponse<InputStream> unread =
        client.send(
            HttpRequest.newBuilder(uri("/big")).build(), HttpResponse.BodyHandlers.ofInputStream());
    assertThat(LimiterProbe.availablePermits(limiter)).as("held while the body is unread").isZero();
    unread.body().close();
    // The JDK's client may subscribe to the body after send returns; a stream closed before that
    // cancels the subscription when it comes, on the client's thread.
    assertThat(permitsWithin(Duration.ofSeconds(5), 1))
        .as("closing the stream cancels the body")
        .isEqualTo(1);
    HttpResponse<InputStream> read =
        client.send(
            HttpRequest.newBuilder(uri("/big")).build(), HttpResponse.BodyHandlers.ofInputStream());
    try (InputStream body = read.body()) {
      assertThat(body.readAllBytes()).hasSize(8 << 20);
      assertThat(LimiterProbe.availablePermits(limiter)).as("received in full").isEqualTo(1);
    }
  }

  @Test
  void everyPacedRequestIsReportedWithItsHop() throws Exception {
    List<SentRequest> sent = new CopyOnWriteArrayList<>();
    PacedHttpClient client =
        PacedHttpClient.builder(bare, LimiterLookup.only(limiter))
            .followRedirects(HttpClient.Redirect.NORMAL)
            .onRequest(sent::add)
            .build();
    client.send(
        HttpRequest.newBuilder(uri("/see-other")).build(), HttpResponse.BodyHandlers.discarding());
    assertThat(sent).extracting(SentRequest::hop).containsExactly(0, 1);
    assertThat(sent).extracting(SentRequest::status).containsExactly(303, 200);
  }

  @Test
  void aListenerThatThrowsStopsNoRequestAndIsLoggedOnce() throws Exception {
    PacedHttpClient client =
        PacedHttpClient.builder(bare, LimiterLookup.only(limiter))
            .followRedirects(HttpClient.Redirect.NORMAL)
            .onRequest(
                r -> {
                  throw new IllegalStateException("listener bug");
                })
            .build();
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      HttpResponse<String> redirected =
          client.send(
              HttpRequest.newBuilder(uri("/see-other")).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(redirected.body()).isEqualTo("body of /landed");
      assertThat(
              client
                  .sendAsync(
                      HttpRequest.newBuilder(uri("/a")).build(),
                      HttpResponse.BodyHandlers.ofString())
                  .get()
                  .statusCode())
          .isEqualTo(200);
    } finally {
      System.setErr(original);
    }
    assertThat(arrivals).containsExactly("GET /see-other", "GET /landed", "GET /a");
    String log = captured.toString(StandardCharsets.UTF_8);
    assertThat(log.lines().filter(l -> l.contains("WARN")))
        .as("three failures, one WARN")
        .singleElement()
        .asString()
        .endsWith(
            "WARN dev.pacer.jdkhttp.PacedHttpClient - The request listener threw; requests go on,"
                + " and its later failures are not logged");
    assertThat(log.split("listener bug", -1)).hasSize(2);
  }

  @Test
  void aWebSocketIsRefusedBecauseItWouldNotBePaced() {
    assertThatThrownBy(() -> PacedHttpClient.of(bare, limiter).newWebSocketBuilder())
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("not be paced");
  }

  /** The limiter's available permits once they reach {@code expected}, or at {@code within}. */
  private int permitsWithin(Duration within, int expected) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    int permits = LimiterProbe.availablePermits(limiter);
    while (permits != expected && System.nanoTime() - deadline < 0) {
      Thread.sleep(1);
      permits = LimiterProbe.availablePermits(limiter);
    }
    return permits;
  }
}
