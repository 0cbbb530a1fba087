package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

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
    server.createContext("/", exchange -> {
      String path = exchange.getRequestURI().getPath();
      hits.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
      int status = path.startsWith("/status/") ? Integer.parseInt(path.substring(8)) : 200;
      byte[] body = path.equals("/big") ? new byte[2048]
          : ("body of " + path + " ua=" + exchange.getRequestHeaders().getFirst("User-Agent"))
              .getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
    Destination destination = Destination.builder("fetcher-test").ratePerSecond(10)
        .maxConcurrency(2).build();
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
    assertThat(new String(first.body(), StandardCharsets.UTF_8)).isEqualTo("body of /a ua=pacer-test");
    assertThat(time.sleepsMillis()).containsExactly(0L, 100L);
    assertThat(fetcher.requestCount()).isEqualTo(2);
  }

  @Test
  void aBackoffStatusThrottlesAndBacksOffWithoutLockingOut() throws Exception {
    DestinationFetcher fetcher = fetcher();
    assertThatThrownBy(() -> fetcher.fetch(uri("/status/429")))
        .isInstanceOf(ThrottledException.class)
        .satisfies(e -> assertThat(((ThrottledException) e).status()).isEqualTo(429));
    assertThat(limiter.backoffMultiplier()).isEqualTo(2);
    assertThatThrownBy(() -> fetcher.fetch(uri("/status/503"))).isInstanceOf(ThrottledException.class);
    assertThat(limiter.backoffMultiplier()).isEqualTo(4);
    assertThat(limiter.isLockedOut()).isFalse();
    assertThat(fetcher.throttledCount()).isEqualTo(2);
    // The widened interval reaches the cursor: the next turn after two backoffs is 4 x 100 ms later.
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
    assertThatThrownBy(() -> fetcher.fetch(uri("/status/429"))).isInstanceOf(ThrottledException.class);
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

  @Test
  void theAchievedRateIsLoggedEveryFiftyRequests() throws Exception {
    DestinationFetcher fetcher = fetcher();
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      for (int i = 0; i < 49; i++) {
        fetcher.fetch(uri("/r"));
      }
      assertThat(captured.toString(StandardCharsets.UTF_8)).doesNotContain("achieved");
      fetcher.fetch(uri("/r"));
    } finally {
      System.setErr(original);
    }
    assertThat(captured.toString(StandardCharsets.UTF_8))
        .contains("Destination fetcher-test: 50 requests from this process, which achieved 10.00/s");
  }

  @Test
  void invalidSettingsAreRefusedNamingTheValue() {
    assertThatThrownBy(() -> DestinationFetcher.builder(limiter).maxBodyBytes(-1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
  }
}
