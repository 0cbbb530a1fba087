package dev.pacer.jdkhttp.fetch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.LockedOutException;
import dev.pacer.ThrottledException;
import dev.pacer.TimeSource;
import dev.pacer.jdkhttp.SentRequest;
import dev.pacer.jdkhttp.internal.DiscardedBody;
import dev.pacer.testing.FakeTime;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fetch path against a real local HTTP server, with pacing on a fake clock: turns are granted
 * without sleeping, so these tests observe classification, backoff and lockout, never timing.
 */
class DestinationFetcherTest {

  private final FakeTime time = new FakeTime();
  private final Map<String, AtomicInteger> hits = new ConcurrentHashMap<>();
  private HttpServer server;
  private DestinationLimiter limiter;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        exchange -> {
          String path = exchange.getRequestURI().getPath();
          hits.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
          int status = path.startsWith("/status/") ? Integer.parseInt(path.substring(8)) : 200;
          if (path.startsWith("/hop/")) {
            // /hop/K/S redirects (relative Location) to /hop/K-1/S; /hop/0/S answers S.
            String[] parts = path.split("/");
            int k = Integer.parseInt(parts[2]);
            status = k == 0 ? Integer.parseInt(parts[3]) : 301;
            if (k > 0) {
              exchange.getResponseHeaders().add("Location", "/hop/" + (k - 1) + "/" + parts[3]);
            }
          }
          String query = exchange.getRequestURI().getQuery();
          if (path.equals("/redirect") && query != null) {
            status = 302;
            exchange.getResponseHeaders().add("Location", query.substring("to=".length()));
          } else if (path.equals("/redirect")) {
            status = 302;
          }
          byte[] body =
              path.startsWith("/big")
                  ? new byte[2048]
                  : ("body of "
                          + path
                          + " ua="
                          + exchange.getRequestHeaders().getFirst("User-Agent"))
                      .getBytes(StandardCharsets.UTF_8);
          // /big-chunked declares no length: the cap must catch it while it streams.
          exchange.sendResponseHeaders(status, path.equals("/big-chunked") ? 0 : body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    server.start();
    Destination destination =
        Destination.builder("fetcher-test").ratePerSecond(10).maxConcurrency(2).build();
    limiter = new LimiterRegistry(new LocalCursor(time), time).limiter(destination);
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
  }

  private DestinationFetcher fetcher() {
    return DestinationFetcher.builder(limiter).header("User-Agent", "pacer-test").build();
  }

  @Test
  void aSuccessReturnsTheBodyAndIsPacedThroughTheLimiter() throws Exception {
    DestinationFetcher fetcher = fetcher();
    FetchResponse first = fetcher.fetch(uri("/a"));
    fetcher.fetch(uri("/b"));
    assertThat(first.status()).isEqualTo(200);
    assertThat(new String(first.body(), StandardCharsets.UTF_8))
        .isEqualTo("body of /a ua=pacer-test");
    // The first request opens the first connection and takes two turns; later ones take one.
    assertThat(time.sleepsMillis()).containsExactly(0L, 200L);
    assertThat(fetcher.requestCount()).isEqualTo(2);
  }

  /**
   * At an interval of a second or more, lateness that could bring a second request too close would
   * have to be as long: the first request takes one turn.
   */
  @Test
  void atOneRequestASecondOrSlowerTheFirstRequestTakesOneTurn() throws Exception {
    for (double rate : new double[] {1.0, 0.5}) {
      int before = time.sleepsMillis().size();
      DestinationLimiter slow =
          new LimiterRegistry(new LocalCursor(time), time)
              .limiter(Destination.builder("fetcher-test-" + rate).ratePerSecond(rate).build());
      DestinationFetcher fetcher = DestinationFetcher.builder(slow).build();
      fetcher.fetch(uri("/a"));
      fetcher.fetch(uri("/b"));
      List<Long> sleeps = time.sleepsMillis();
      assertThat(sleeps.subList(before, sleeps.size()))
          .as("at %s/s", rate)
          .containsExactly(0L, Math.round(1000 / rate));
    }
  }

  @Test
  void aBackoffStatusThrottlesAndBacksOffWithoutLockingOut() throws Exception {
    DestinationFetcher fetcher = fetcher();
    assertThatThrownBy(() -> fetcher.fetch(uri("/status/429")))
        .isInstanceOf(ThrottledException.class)
        .satisfies(e -> assertThat(((ThrottledException) e).status()).isEqualTo(429));
    assertThat(limiter.backoffMultiplier()).isEqualTo(2);
    assertThatThrownBy(() -> fetcher.fetch(uri("/status/503")))
        .isInstanceOf(ThrottledException.class);
    assertThat(limiter.backoffMultiplier()).isEqualTo(4);
    assertThat(limiter.isLockedOut()).isFalse();
    assertThat(fetcher.throttledCount()).isEqualTo(2);
    // The widened interval reaches the cursor: the next turn after two backoffs is 4 x 100 ms
    // later.
    fetcher.fetch(uri("/ok"));
    fetcher.fetch(uri("/ok"));
    assertThat(time.lastSleepMillis()).isEqualTo(400L);
  }

  @Test
  void aLockoutStatusLocksTheDestinationOutAndStopsLaterFetchesBeforeTheNetwork() {
    DestinationFetcher fetcher = fetcher();
    assertThatThrownBy(() -> fetcher.fetch(uri("/status/403")))
        .isInstanceOf(LockedOutException.class)
        .hasMessageContaining("403");
    assertThat(limiter.isLockedOut()).isTrue();
    assertThatThrownBy(() -> fetcher.fetch(uri("/after"))).isInstanceOf(LockedOutException.class);
    assertThat(hits).doesNotContainKey("/after");
  }

  @Test
  void otherStatusesAreOrdinaryFailuresThatCountAsCleanResponses() throws Exception {
    DestinationFetcher fetcher = fetcher();
    assertThatThrownBy(() -> fetcher.fetch(uri("/status/429")))
        .isInstanceOf(ThrottledException.class);
    for (int i = 0; i < 100; i++) {
      assertThatThrownBy(() -> fetcher.fetch(uri("/status/404")))
          .isInstanceOf(FetchFailedException.class)
          .satisfies(e -> assertThat(((FetchFailedException) e).status()).hasValue(404));
    }
    // 100 clean responses in a row halve the multiplier: a 404 is not rate pressure.
    assertThat(limiter.backoffMultiplier()).isEqualTo(1);
    assertThat(fetcher.throttledCount()).isEqualTo(1);
  }

  @Test
  void aNetworkErrorIsAnOrdinaryFailureNeverAThrottle() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    DestinationFetcher fetcher = fetcher();
    assertThatThrownBy(() -> fetcher.fetch(URI.create("http://127.0.0.1:" + closedPort + "/x")))
        .isInstanceOf(FetchFailedException.class)
        .hasMessageContaining("network error")
        .satisfies(e -> assertThat(((FetchFailedException) e).status()).isEmpty());
    assertThat(limiter.backoffMultiplier()).isEqualTo(1);
    assertThat(limiter.isLockedOut()).isFalse();
  }

  @Test
  void aBodyOverTheCapFails() throws Exception {
    DestinationFetcher capped = DestinationFetcher.builder(limiter).maxBodyBytes(1024).build();
    assertThatThrownBy(() -> capped.fetch(uri("/big")))
        .isInstanceOf(FetchFailedException.class)
        .hasMessageContaining("cap of 1024 bytes");
    DestinationFetcher roomy = DestinationFetcher.builder(limiter).maxBodyBytes(2048).build();
    assertThat(roomy.fetch(uri("/big")).body()).hasSize(2048);
  }

  // Redirects

  @Test
  void eachRedirectHopTakesItsOwnTurnAndTheFinalBodyIsReturned() throws Exception {
    List<SentRequest> sent = new CopyOnWriteArrayList<>();
    DestinationFetcher fetcher = DestinationFetcher.builder(limiter).onRequest(sent::add).build();
    FetchResponse response = fetcher.fetch(uri("/hop/3/200"));
    assertThat(new String(response.body(), StandardCharsets.UTF_8))
        .startsWith("body of /hop/0/200");
    assertThat(response.uri()).isEqualTo(uri("/hop/0/200"));
    assertThat(time.sleepsMillis())
        .as("a turn per hop, the first one two intervals wide")
        .containsExactly(0L, 200L, 100L, 100L);
    assertThat(fetcher.requestCount()).isEqualTo(4);
    assertThat(sent).extracting(SentRequest::hop).containsExactly(0, 1, 2, 3);
    assertThat(sent).extracting(SentRequest::status).containsExactly(301, 301, 301, 200);
    assertThat(sent)
        .extracting(SentRequest::uri)
        .containsExactly(
            uri("/hop/3/200"), uri("/hop/2/200"), uri("/hop/1/200"), uri("/hop/0/200"));
    for (int i = 1; i < sent.size(); i++) {
      assertThat(sent.get(i).turnNanos() - sent.get(i - 1).turnNanos())
          .isEqualTo(Duration.ofMillis(i == 1 ? 200 : 100).toNanos());
    }
    assertThat(sent).allSatisfy(r -> assertThat(r.lateness().isNegative()).isFalse());
    // A redirect hop's slot is held while its unread body drains in the background, at most
    // DiscardedBody.MAX_TIME, which may end after fetch returns.
    long drained = System.nanoTime() + DiscardedBody.MAX_TIME.multipliedBy(2).toNanos();
    while (LimiterProbe.availablePermits(limiter) < 2 && System.nanoTime() < drained) {
      Thread.sleep(5);
    }
    assertThat(LimiterProbe.availablePermits(limiter))
        .as("each hop's slot was closed")
        .isEqualTo(2);
  }

  @Test
  void aChainLongerThanTheCapFailsNamingTheUrlAndTheCap() throws Exception {
    DestinationFetcher fetcher = fetcher();
    assertThat(fetcher.fetch(uri("/hop/5/200")).status()).isEqualTo(200);
    assertThatThrownBy(() -> fetcher.fetch(uri("/hop/6/200")))
        .isInstanceOf(FetchFailedException.class)
        .hasMessageContaining(uri("/hop/6/200").toString())
        .hasMessageContaining("maxRedirects 5");
    // The 5-hop chain reached /hop/1/200 once; the 6-hop chain sent 6 requests and stopped there.
    assertThat(hits.get("/hop/1/200")).hasValue(2);
    assertThat(hits.get("/hop/0/200")).hasValue(1);
    DestinationFetcher none = DestinationFetcher.builder(limiter).maxRedirects(0).build();
    assertThatThrownBy(() -> none.fetch(uri("/hop/1/200")))
        .isInstanceOf(FetchFailedException.class)
        .hasMessageContaining("maxRedirects 0");
  }

  @Test
  void aRedirectToAnotherHostIsNotFollowedAndThatHostHearsNothing() throws Exception {
    AtomicInteger elsewhere = new AtomicInteger();
    HttpServer other = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    other.createContext(
        "/",
        exchange -> {
          elsewhere.incrementAndGet();
          exchange.sendResponseHeaders(200, -1);
          exchange.close();
        });
    other.start();
    try {
      DestinationFetcher fetcher = fetcher();
      for (String target :
          List.of(
              "http://127.0.0.1:" + other.getAddress().getPort() + "/x",
              "http://localhost:" + server.getAddress().getPort() + "/x",
              "https://127.0.0.1:" + server.getAddress().getPort() + "/x")) {
        assertThatThrownBy(() -> fetcher.fetch(uri("/redirect?to=" + target)))
            .isInstanceOf(FetchFailedException.class)
            .hasMessageContaining("to another host " + target)
            .hasMessageContaining("its own ceiling");
      }
      assertThat(elsewhere).hasValue(0);
      assertThat(hits).doesNotContainKey("/x");
    } finally {
      other.stop(0);
    }
  }

  @Test
  void aMissingOrUnparsableLocationFailsClearly() {
    DestinationFetcher fetcher = fetcher();
    assertThatThrownBy(() -> fetcher.fetch(uri("/redirect")))
        .isInstanceOf(FetchFailedException.class)
        .hasMessageContaining("has no Location");
    assertThatThrownBy(() -> fetcher.fetch(uri("/redirect?to=http://[bad")))
        .isInstanceOf(FetchFailedException.class)
        .hasMessageContaining("unparsable Location");
  }

  @Test
  void anAbsoluteLocationOnTheSameOriginIsFollowed() throws Exception {
    FetchResponse response = fetcher().fetch(uri("/redirect?to=" + uri("/landed")));
    assertThat(response.uri()).isEqualTo(uri("/landed"));
  }

  @Test
  void aBackoffStatusOnALaterHopBacksOffAndALockoutStatusLocksOut() throws Exception {
    DestinationFetcher fetcher = fetcher();
    assertThatThrownBy(() -> fetcher.fetch(uri("/hop/2/429")))
        .isInstanceOf(ThrottledException.class);
    assertThat(limiter.backoffMultiplier()).isEqualTo(2);
    assertThat(fetcher.throttledCount()).isEqualTo(1);
    assertThatThrownBy(() -> fetcher.fetch(uri("/hop/2/403")))
        .isInstanceOf(LockedOutException.class)
        .hasMessageContaining("HTTP 403 from " + uri("/hop/0/403"));
    assertThat(limiter.isLockedOut()).isTrue();
  }

  // Lateness

  @Test
  void everyRequestIsReportedWithItsLatenessOnTheLimitersClock() throws Exception {
    // Every sleep ends 7 ms late on the fake clock and nothing else moves it, so every request
    // leaves exactly 7 ms after its turn began.
    TimeSource wakingLate =
        new TimeSource() {
          @Override
          public long nanoTime() {
            return time.nanoTime();
          }

          @Override
          public void sleepNanos(long nanos) throws InterruptedException {
            time.sleepNanos(nanos);
            time.advance(Duration.ofMillis(7));
          }
        };
    DestinationLimiter lateLimiter =
        new LimiterRegistry(new LocalCursor(time), wakingLate)
            .limiter(Destination.builder("late-waker").ratePerSecond(10).build());
    List<SentRequest> sent = new CopyOnWriteArrayList<>();
    DestinationFetcher fetcher =
        DestinationFetcher.builder(lateLimiter).onRequest(sent::add).build();
    fetcher.fetch(uri("/hop/1/200"));
    assertThatThrownBy(() -> fetcher.fetch(uri("/status/404")))
        .isInstanceOf(FetchFailedException.class);
    assertThat(sent).extracting(SentRequest::hop).containsExactly(0, 1, 0);
    assertThat(sent).extracting(SentRequest::status).containsExactly(301, 200, 404);
    assertThat(sent).extracting(SentRequest::lateness).containsOnly(Duration.ofMillis(7));
    assertThat(sent)
        .allSatisfy(
            r ->
                assertThat(r.sentEpochMicros())
                    .isCloseTo(System.currentTimeMillis() * 1000, within(60_000_000L)));
  }

  @Test
  void aRequestWithoutAnAnswerIsReportedWithoutAStatus() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    List<SentRequest> sent = new CopyOnWriteArrayList<>();
    DestinationFetcher fetcher = DestinationFetcher.builder(limiter).onRequest(sent::add).build();
    assertThatThrownBy(() -> fetcher.fetch(URI.create("http://127.0.0.1:" + closedPort + "/x")))
        .isInstanceOf(FetchFailedException.class);
    assertThat(sent)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.status()).isEqualTo(SentRequest.NO_STATUS);
              assertThat(r.answered()).isFalse();
            });
  }

  @Test
  void aListenerThatThrowsDoesNotBreakTheFetchAndIsLoggedOnce() throws Exception {
    DestinationFetcher fetcher =
        DestinationFetcher.builder(limiter)
            .onRequest(
                r -> {
                  throw new IllegalStateException("listener bug");
                })
            .build();
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      assertThat(fetcher.fetch(uri("/hop/1/200")).status()).isEqualTo(200);
      assertThat(fetcher.fetch(uri("/a")).status()).isEqualTo(200);
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertThat(log.split("request listener threw", -1)).hasSize(2);
  }

  // Streaming to a file

  @Test
  void aBodyStreamsToTheFileAndIsNotKeptInMemory(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("body");
    Files.writeString(file, "an older, longer body that must be truncated away");
    FetchResponse response = fetcher().fetchTo(uri("/hop/1/200"), file);
    String expected = "body of /hop/0/200 ua=pacer-test";
    assertThat(Files.readString(file)).isEqualTo(expected);
    assertThat(response.bodyBytes()).isEqualTo(expected.length());
    assertThat(response.content()).isEqualTo(new FetchResponse.Content.InFile(file));
    assertThatThrownBy(response::body)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(file.toString());
  }

  @Test
  void aStreamedBodyOverTheCapFailsAndLeavesNoFile(@TempDir Path dir) throws Exception {
    DestinationFetcher capped = DestinationFetcher.builder(limiter).maxBodyBytes(1024).build();
    for (String path : List.of("/big", "/big-chunked")) {
      Path file = dir.resolve(path.substring(1));
      assertThatThrownBy(() -> capped.fetchTo(uri(path), file))
          .isInstanceOf(FetchFailedException.class)
          .hasMessageContaining("cap of 1024 bytes")
          .satisfies(e -> assertThat(((FetchFailedException) e).status()).hasValue(200));
      assertThat(file).doesNotExist();
    }
    assertThat(hits.get("/big-chunked")).hasValue(1);
    Path roomy = dir.resolve("roomy");
    DestinationFetcher.builder(limiter)
        .maxBodyBytes(2048)
        .build()
        .fetchTo(uri("/big-chunked"), roomy);
    assertThat(roomy).hasSize(2048);
  }

  @Test
  void aFailedFetchLeavesAnExistingFileAloneWhenNoBodyStarted(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("body");
    Files.writeString(file, "kept");
    assertThatThrownBy(() -> fetcher().fetchTo(uri("/status/404"), file))
        .isInstanceOf(FetchFailedException.class);
    assertThat(Files.readString(file)).isEqualTo("kept");
  }

  @Test
  void theAchievedRateIsLoggedEveryFiftyRequests() throws Exception {
    DestinationFetcher fetcher = fetcher();
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      // 50 requests, the first two intervals wide: 49 ÷ 5.0 s, 9.80/s.
      for (int i = 0; i < 49; i++) {
        fetcher.fetch(uri("/r"));
      }
      assertThat(captured.toString(StandardCharsets.UTF_8)).doesNotContain("achieved");
      fetcher.fetch(uri("/r"));
    } finally {
      System.setErr(original);
    }
    assertThat(captured.toString(StandardCharsets.UTF_8))
        .contains("Destination fetcher-test: 50 requests from this process, which achieved 9.80/s");
  }

  @Test
  void warmUpSendsNothingToTheDestinationAndTakesNoTurn() throws Exception {
    List<SentRequest> sent = new CopyOnWriteArrayList<>();
    DestinationFetcher fetcher = DestinationFetcher.builder(limiter).onRequest(sent::add).build();
    fetcher.warmUp(uri("/a"));
    fetcher.warmUp(URI.create("https://127.0.0.1:" + server.getAddress().getPort() + "/a"));
    assertThat(hits).isEmpty();
    assertThat(time.sleepsMillis()).isEmpty();
    assertThat(sent).isEmpty();
    assertThat(fetcher.requestCount()).isZero();
    assertThat(fetcher.fetch(uri("/a")).status()).isEqualTo(200);
  }

  @Test
  void invalidSettingsAreRefusedNamingTheValue() {
    assertThatThrownBy(() -> DestinationFetcher.builder(limiter).maxBodyBytes(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("-1");
    assertThatThrownBy(() -> DestinationFetcher.builder(limiter).maxRedirects(-2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("-2");
    assertThatThrownBy(
            () ->
                DestinationFetcher.builder(limiter)
                    .httpClient(
                        HttpClient.newBuilder()
                            .followRedirects(HttpClient.Redirect.NORMAL)
                            .build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("NORMAL");
  }
}
