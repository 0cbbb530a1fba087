package dev.pacer.jdkhttp.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.Slot;
import dev.pacer.ThrottledException;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.testing.FakeTime;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The bodies nobody reads (a redirect hop's, an answer the fetcher only classifies). First as a
 * subscriber, fed by hand: it reads at most its byte cap, and holds the request's slot until it
 * ends. Then against a local destination that would send them forever: the drain stops at its byte
 * cap or its time bound, the connection is closed, and the request's permit is held until then. The
 * HTTP client is real, so those run on real time; pacing is on a fake clock.
 */
class DiscardedBodyTest {

  private final FakeTime time = new FakeTime();

  /** Released once for each answer whose connection the client closed under it. */
  private final Semaphore cuts = new Semaphore(0);

  private final ExecutorService handlers = Executors.newCachedThreadPool();
  private HttpServer server;
  private DestinationLimiter limiter;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(handlers);
    server.createContext(
        "/",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          String path = exchange.getRequestURI().getPath();
          switch (path) {
            case "/endless-redirect" -> {
              exchange.getResponseHeaders().add("Location", "/landed");
              stream(exchange, 302, 0, 16 * 1024, Duration.ZERO);
            }
            case "/huge-redirect" -> {
              exchange.getResponseHeaders().add("Location", "/landed");
              stream(exchange, 302, 1L << 40, 16 * 1024, Duration.ZERO);
            }
            case "/trickled-429" -> stream(exchange, 429, 1000, 1, Duration.ofMillis(50));
            default -> {
              byte[] body = "landed".getBytes(StandardCharsets.UTF_8);
              exchange.sendResponseHeaders(200, body.length);
              try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
              }
            }
          }
        });
    server.start();
    limiter =
        new LimiterRegistry(new LocalCursor(time), time)
            .limiter(
                Destination.builder("discard-test").ratePerSecond(10).maxConcurrency(1).build());
  }

  /**
   * Answers {@code status} with a body of {@code length} ({@code 0}: chunked), in writes of {@code
   * chunk} bytes {@code pause} apart, until the client closes the connection.
   */
  private void stream(HttpExchange exchange, int status, long length, int chunk, Duration pause)
      throws IOException {
    exchange.sendResponseHeaders(status, length);
    byte[] bytes = new byte[chunk];
    try (OutputStream out = exchange.getResponseBody()) {
      while (true) {
        out.write(bytes);
        out.flush();
        if (!pause.isZero()) {
          Thread.sleep(pause.toMillis());
        }
      }
    } catch (IOException e) {
      cuts.release();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @AfterEach
  void stop() {
    server.stop(0);
    handlers.shutdownNow();
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
  }

  /** A subscription that records what the subscriber asked of it. */
  private static final class Recorded implements Flow.Subscription {
    long requested;
    boolean cancelled;

    @Override
    public void request(long n) {
      requested += n;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }
  }

  private static HttpResponse.ResponseInfo answer(int status, Map<String, List<String>> headers) {
    HttpHeaders h = HttpHeaders.of(headers, (name, value) -> true);
    return new HttpResponse.ResponseInfo() {
      @Override
      public int statusCode() {
        return status;
      }

      @Override
      public HttpHeaders headers() {
        return h;
      }

      @Override
      public HttpClient.Version version() {
        return HttpClient.Version.HTTP_1_1;
      }
    };
  }

  private HttpResponse.BodySubscriber<Void> discarded(HttpResponse.ResponseInfo info, Slot slot) {
    return new SlotReleasingBody<>(new DiscardedBody<>(null, info), slot);
  }

  @Test
  void aShortBodyIsReadToItsEndHoldingTheSlotUntilThen() throws Exception {
    Slot slot = limiter.acquire();
    HttpResponse.BodySubscriber<Void> body = discarded(answer(302, Map.of()), slot);
    Recorded subscription = new Recorded();
    body.onSubscribe(subscription);
    assertThat(body.getBody().toCompletableFuture())
        .as("the answer is complete at its headers")
        .isCompleted();
    body.onNext(List.of(ByteBuffer.allocate(1000)));
    assertThat(LimiterProbe.availablePermits(limiter)).as("held while the body drains").isZero();
    body.onComplete();
    assertThat(subscription.cancelled).as("a body read to its end keeps its connection").isFalse();
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
  }

  @Test
  void anEndlessBodyIsCutOffPastTheByteCapAndThenTheSlotGoesBack() throws Exception {
    Slot slot = limiter.acquire();
    HttpResponse.BodySubscriber<Void> body = discarded(answer(429, Map.of()), slot);
    Recorded subscription = new Recorded();
    body.onSubscribe(subscription);
    long fed = 0;
    while (!subscription.cancelled && fed <= DiscardedBody.MAX_BYTES) {
      assertThat(LimiterProbe.availablePermits(limiter)).isZero();
      body.onNext(List.of(ByteBuffer.allocate(16 * 1024)));
      fed += 16 * 1024;
    }
    assertThat(subscription.cancelled).as("cancelled, which closes the connection").isTrue();
    assertThat(fed).isEqualTo(DiscardedBody.MAX_BYTES + 16 * 1024);
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
  }

  @Test
  void aBodyDeclaredLongerThanTheCapIsNotReadAtAll() throws Exception {
    Slot slot = limiter.acquire();
    HttpResponse.BodySubscriber<Void> body =
        discarded(
            answer(
                301, Map.of("Content-Length", List.of(Long.toString(DiscardedBody.MAX_BYTES + 1)))),
            slot);
    Recorded subscription = new Recorded();
    body.onSubscribe(subscription);
    assertThat(subscription.cancelled).isTrue();
    assertThat(subscription.requested).isZero();
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
  }

  @Test
  void aFollowedRedirectsEndlessBodyIsCutOffAndItsConnectionClosed() throws Exception {
    HttpClient bare = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();
    PacedHttpClient client =
        PacedHttpClient.builder(bare, LimiterLookup.only(limiter))
            .followRedirects(HttpClient.Redirect.NORMAL)
            .build();
    for (String path : List.of("/endless-redirect", "/huge-redirect")) {
      long start = System.nanoTime();
      HttpResponse<String> landed =
          client.send(
              HttpRequest.newBuilder(uri(path)).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(landed.body()).as(path).isEqualTo("landed");
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .as(path)
          .isLessThan(Duration.ofSeconds(3));
    }
    assertThat(cuts.tryAcquire(2, 3, TimeUnit.SECONDS))
        .as("the destination saw both connections closed")
        .isTrue();
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
  }

  @Test
  void aThrottledAnswersTricklingBodyHoldsThePermitUntilItsTimeBoundThenClosesTheConnection()
      throws Exception {
    DestinationFetcher fetcher = DestinationFetcher.builder(limiter).build();
    long start = System.nanoTime();
    assertThatThrownBy(() -> fetcher.fetch(uri("/trickled-429")))
        .isInstanceOf(ThrottledException.class);
    assertThat(LimiterProbe.availablePermits(limiter)).as("the drain holds the permit").isZero();
    assertThat(cuts.tryAcquire(DiscardedBody.MAX_TIME.toMillis() + 2000, TimeUnit.MILLISECONDS))
        .as("the destination saw its connection closed")
        .isTrue();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
    while (LimiterProbe.availablePermits(limiter) == 0 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(LimiterProbe.availablePermits(limiter))
        .as("given back when the drain was cut off")
        .isEqualTo(1);
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .isLessThan(DiscardedBody.MAX_TIME.plusSeconds(3));
  }
}
