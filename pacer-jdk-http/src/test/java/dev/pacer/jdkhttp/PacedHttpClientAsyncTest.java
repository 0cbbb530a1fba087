package dev.pacer.jdkhttp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.AsyncPools;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.LockedOutException;
import dev.pacer.TimeSource;
import dev.pacer.testing.Answer;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Request;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.WallClockSteps;
import java.io.IOException;
import java.io.InputStream;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link PacedHttpClient#sendAsync} against a local server, in real time on Pacer's default {@link
 * AsyncPools}: the ceiling holds where requests arrive while one thread issues them all without
 * waiting (judged at the {@link Door} by {@link FleetBounds}; the same requests unpaced break it),
 * each redirect hop takes its own turn, a 429 pauses and a 403 locks out, and a cancelled future
 * gives back its permit. Every scenario lasts a few seconds at most. The scenarios whose answers
 * follow the test (a request held, a chain of redirects) and which judge no ceiling run against a
 * {@link DoorServer} in this JVM.
 */
class PacedHttpClientAsyncTest {

  /** The paths the door began to answer, in order: a held request is in it while it is held. */
  private final List<String> paths = new CopyOnWriteArrayList<>();

  private final CountDownLatch release = new CountDownLatch(1);
  private DoorServer server;
  private final SendThreads delegate =
      new SendThreads(HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build());
  private final LimiterRegistry registry =
      new LimiterRegistry(new LocalCursor(TimeSource.SYSTEM), TimeSource.SYSTEM);

  /** The door the ceiling is judged at: its senders share this JVM, so it runs in its own. */
  private static Door door;

  @BeforeAll
  static void openTheDoor() throws IOException {
    WallClockSteps.get();
    door = Door.start();
  }

  @AfterAll
  static void closeTheDoor() throws IOException {
    door.close();
  }

  @BeforeEach
  void start() throws IOException {
    server = new DoorServer(this::answer);
  }

  /**
   * {@code /chain/N}: 302 to {@code /chain/N-1} down to {@code /chain/0}; {@code /busy}: 429 with
   * {@code Retry-After: 1}; {@code /forbidden}: 403; {@code /held}: 200 once the test ends; {@code
   * /big}: 8 MiB, more than the client buffers ahead of a reader who has not read yet; anything
   * else 200 with "body of PATH".
   */
  private Answer answer(Request request) {
    String path = request.path();
    paths.add(path);
    if (path.startsWith("/chain/") && !path.equals("/chain/0")) {
      int left = Integer.parseInt(path.substring("/chain/".length()));
      return Answer.text(302, "moved").with("Location", "/chain/" + (left - 1));
    } else if (path.equals("/busy")) {
      return Answer.text(429, "busy").with("Retry-After", "1");
    } else if (path.equals("/forbidden")) {
      return Answer.text(403, "forbidden");
    } else if (path.equals("/held")) {
      try {
        release.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    } else if (path.equals("/big")) {
      return new Answer(200, Map.of(), new byte[8 << 20]);
    }
    return Answer.text(200, "body of " + path);
  }

  @AfterEach
  void stop() throws IOException {
    release.countDown();
    server.close();
  }

  private URI uri(String path) {
    return URI.create(server.url(path));
  }

  private HttpRequest get(String path) {
    return HttpRequest.newBuilder(uri(path)).build();
  }

  private DestinationLimiter limiter(String name, int rate, int maxConcurrency) {
    return registry.limiter(
        Destination.builder(name).ratePerSecond(rate).maxConcurrency(maxConcurrency).build());
  }

  @Test
  void oneThreadIssuesEveryRequestAtOnceAndTheyArriveWithinTheCeiling() throws Exception {
    int ceiling = 20;
    int n = 50;
    DestinationLimiter limiter = limiter("async-ceiling", ceiling, 8);
    PacedHttpClient client = PacedHttpClient.of(delegate, limiter);
    // The first request of a JVM through this path (loading the JDK's client and this one's
    // classes, starting the pools' threads) leaves tens of ms after its turn, late enough at 20/s
    // to put it into the next request's second: warm up on a destination of its own.
    PacedHttpClient.of(delegate, limiter("async-warm-up", ceiling, 8))
        .sendAsync(atTheDoor("/warm"), HttpResponse.BodyHandlers.ofString())
        .get(10, TimeUnit.SECONDS);
    delegate.threads.clear();
    String run = "/async-ceiling-" + UUID.randomUUID().toString().substring(0, 8) + "/";
    List<CompletableFuture<HttpResponse<String>>> futures = new ArrayList<>();
    long before = System.nanoTime();
    for (int i = 0; i < n; i++) {
      futures.add(client.sendAsync(atTheDoor(run + i), HttpResponse.BodyHandlers.ofString()));
    }
    long issuedMillis = (System.nanoTime() - before) / 1_000_000;
    for (CompletableFuture<HttpResponse<String>> future : futures) {
      assertThat(future.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
    Timeline timeline =
        Timeline.of(door.arrivals().stream().filter(a -> a.path().startsWith(run)).toList());
    System.out.printf(
        "sendAsync: %d issued in %d ms; %s; %d late turns given up%n",
        n, issuedMillis, timeline, limiter.lateTurnsSkipped());
    // Waiting for the turns on this thread would take (n - 1) / ceiling = 2.45 s; issuing them
    // took 5-42 ms on the 2-core build machine at load 3-11.
    assertThat(issuedMillis).as("ms to issue %d requests", n).isLessThan(5 * 1000 / ceiling);
    assertThat(timeline.size()).isEqualTo(n);
    FleetBounds bounds = FleetBounds.at(ceiling, "sendAsync from one thread", door);
    bounds.assertHeld(timeline, timeline);
    bounds.assertDelivered(timeline);
    bounds.assertFewLateTurns(limiter.lateTurnsSkipped(), n + limiter.lateTurnsSkipped());
    assertThat(delegate.threads)
        .as("threads the delegate's sendAsync was called on")
        .hasSize(n)
        .allMatch(name -> name.startsWith("pacer-send-"));
  }

  /** The same requests sent by the same client unpaced: the bounds above can fail. */
  @Test
  void theTwinWithoutPacingBreaksTheCeiling() throws Exception {
    int ceiling = 20;
    int n = 50;
    String run = "/async-unpaced-" + UUID.randomUUID().toString().substring(0, 8) + "/";
    List<CompletableFuture<HttpResponse<String>>> futures = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      futures.add(delegate.sendAsync(atTheDoor(run + i), HttpResponse.BodyHandlers.ofString()));
    }
    for (CompletableFuture<HttpResponse<String>> future : futures) {
      assertThat(future.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
    Timeline timeline =
        Timeline.of(door.arrivals().stream().filter(a -> a.path().startsWith(run)).toList());
    FleetBounds bounds = FleetBounds.at(ceiling, "sendAsync from one thread, unpaced", door);
    bounds.assertWindowBroke(timeline);
    bounds.assertAggregateBroke(timeline);
  }

  private static HttpRequest atTheDoor(String path) {
    return HttpRequest.newBuilder(URI.create(door.url(path))).build();
  }

  /**
   * A hop whose turn has come is sent while the round-trip executor is busy with later turns'
   * reservations: here that executor runs the first reservation and then holds everything given to
   * it, as a queue of blocking JDBC calls would, and the request must still arrive. Sent behind
   * them, it would wait for the last of them, well after its late check.
   */
  @Test
  void aHopIsNotSentBehindTheRoundTripsOfLaterTurns() throws Exception {
    ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
    HoldsAllButTheFirst roundTrips = new HoldsAllButTheFirst();
    try {
      DestinationLimiter limiter =
          new LimiterRegistry(
                  new LocalCursor(TimeSource.SYSTEM),
                  TimeSource.SYSTEM,
                  AsyncPools.of(scheduler, roundTrips))
              .limiter(Destination.builder("async-busy-round-trips").ratePerSecond(10).build());
      CompletableFuture<HttpResponse<String>> first =
          PacedHttpClient.of(delegate, limiter)
              .sendAsync(get("/first"), HttpResponse.BodyHandlers.ofString());
      assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      assertThat(roundTrips.held).as("the hop went to the round-trip executor").isEmpty();
      assertThat(delegate.threads).singleElement().asString().startsWith("pacer-send-");
    } finally {
      roundTrips.held.forEach(Runnable::run);
      scheduler.shutdownNow();
    }
  }

  /** Runs the first task it is given on a thread of its own, and holds every later one. */
  private static final class HoldsAllButTheFirst implements java.util.concurrent.Executor {
    final List<Runnable> held = new CopyOnWriteArrayList<>();
    private boolean ranOne;

    @Override
    public synchronized void execute(Runnable task) {
      if (ranOne) {
        held.add(task);
        return;
      }
      ranOne = true;
      new Thread(task, "first-round-trip").start();
    }
  }

  @Test
  void aRedirectChainTakesATurnPerHop() throws Exception {
    List<SentRequest> sent = new CopyOnWriteArrayList<>();
    PacedHttpClient client =
        PacedHttpClient.builder(delegate, LimiterLookup.only(limiter("async-chain", 10, 1)))
            .followRedirects(HttpClient.Redirect.NORMAL)
            .onRequest(sent::add)
            .build();
    HttpResponse<String> response =
        client
            .sendAsync(get("/chain/3"), HttpResponse.BodyHandlers.ofString())
            .get(10, TimeUnit.SECONDS);
    assertThat(response.body()).isEqualTo("body of /chain/0");
    assertThat(paths).containsExactly("/chain/3", "/chain/2", "/chain/1", "/chain/0");
    assertThat(sent).extracting(SentRequest::hop).containsExactly(0, 1, 2, 3);
    assertThat(sent).extracting(SentRequest::status).containsExactly(302, 302, 302, 200);
    for (int i = 1; i < sent.size(); i++) {
      long gapMillis = (sent.get(i).turnNanos() - sent.get(i - 1).turnNanos()) / 1_000_000;
      // 100 ms apart on the cursor; each turn's local instant carries its own few µs of jitter.
      assertThat(gapMillis)
          .as("turn of hop %d after hop %d's", i, i - 1)
          .isGreaterThanOrEqualTo(95);
    }
    assertThat(delegate.threads).noneMatch(name -> name.startsWith("pacer-turns-"));
  }

  @Test
  void aTooManyRequestsWithRetryAfterPausesTheNextRequest() throws Exception {
    PacedHttpClient client = PacedHttpClient.of(delegate, limiter("async-busy", 10, 1));
    HttpResponse<String> busy =
        client
            .sendAsync(get("/busy"), HttpResponse.BodyHandlers.ofString())
            .get(10, TimeUnit.SECONDS);
    assertThat(busy.statusCode()).as("returned as it is").isEqualTo(429);
    client.sendAsync(get("/after"), HttpResponse.BodyHandlers.ofString()).get(10, TimeUnit.SECONDS);
    List<Arrival> arrivals = server.arrivals();
    long gapMillis = (arrivals.get(1).nanos() - arrivals.get(0).nanos()) / 1_000_000;
    assertThat(gapMillis).as("Retry-After: 1 between the two arrivals").isGreaterThanOrEqualTo(900);
  }

  @Test
  void afterAForbiddenLaterFuturesFailWithLockedOutAndNothingIsSent() throws Exception {
    PacedHttpClient client = PacedHttpClient.of(delegate, limiter("async-forbidden", 10, 1));
    HttpResponse<String> forbidden =
        client
            .sendAsync(get("/forbidden"), HttpResponse.BodyHandlers.ofString())
            .get(10, TimeUnit.SECONDS);
    assertThat(forbidden.statusCode()).isEqualTo(403);
    CompletableFuture<HttpResponse<String>> later =
        client.sendAsync(get("/later"), HttpResponse.BodyHandlers.ofString());
    assertThatThrownBy(() -> later.get(10, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(LockedOutException.class);
    assertThat(paths).containsExactly("/forbidden");
  }

  @Test
  void cancellingBeforeTheTurnGivesBackThePlaceInTheQueue() throws Exception {
    DestinationLimiter limiter = limiter("async-cancel-waiting", 10, 1);
    PacedHttpClient client = PacedHttpClient.of(delegate, limiter);
    HttpResponse<InputStream> holding =
        client
            .sendAsync(get("/big"), HttpResponse.BodyHandlers.ofInputStream())
            .get(10, TimeUnit.SECONDS);
    CompletableFuture<HttpResponse<String>> waiting =
        client.sendAsync(get("/never"), HttpResponse.BodyHandlers.ofString());
    assertThat(LimiterProbe.permitsWaiting(limiter)).isEqualTo(1);
    assertThat(waiting.cancel(true)).isTrue();
    assertThat(LimiterProbe.permitsWaiting(limiter))
        .as("the cancelled acquisition left the queue")
        .isZero();
    holding.body().close();
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
    HttpResponse<String> next =
        client
            .sendAsync(get("/next"), HttpResponse.BodyHandlers.ofString())
            .get(10, TimeUnit.SECONDS);
    assertThat(next.statusCode()).isEqualTo(200);
    assertThat(paths).containsExactly("/big", "/next");
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
  }

  @Test
  void cancellingAfterTheSendCancelsTheExchangeAndGivesBackThePermit() throws Exception {
    DestinationLimiter limiter = limiter("async-cancel-sent", 10, 1);
    PacedHttpClient client = PacedHttpClient.of(delegate, limiter);
    CompletableFuture<HttpResponse<String>> held =
        client.sendAsync(get("/held"), HttpResponse.BodyHandlers.ofString());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (paths.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(paths).containsExactly("/held");
    assertThat(LimiterProbe.availablePermits(limiter)).isZero();
    held.cancel(true);
    // The cancelled exchange fails on the client's thread, which gives the permit back.
    while (LimiterProbe.availablePermits(limiter) == 0 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
    assertThat(
            client
                .sendAsync(get("/next"), HttpResponse.BodyHandlers.ofString())
                .get(10, TimeUnit.SECONDS)
                .statusCode())
        .isEqualTo(200);
  }

  @Test
  void anAnswerLaterThanTheAnswerTimeoutFailsTheFutureWithHttpTimeout() {
    PacedHttpClient client =
        PacedHttpClient.builder(delegate, LimiterLookup.only(limiter("async-timeout", 10, 1)))
            .answerTimeout(Duration.ofMillis(200))
            .build();
    CompletableFuture<HttpResponse<String>> held =
        client.sendAsync(get("/held"), HttpResponse.BodyHandlers.ofString());
    assertThatThrownBy(() -> held.get(10, TimeUnit.SECONDS))
        .hasCauseInstanceOf(java.net.http.HttpTimeoutException.class)
        .hasMessageContaining("within 200 ms");
  }

  /** The JDK's client, recording the thread each {@code sendAsync} is called on. */
  private static final class SendThreads extends HttpClient {
    private final HttpClient client;
    final List<String> threads = new CopyOnWriteArrayList<>();

    SendThreads(HttpClient client) {
      this.client = client;
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(
        HttpRequest request,
        HttpResponse.BodyHandler<T> handler,
        HttpResponse.PushPromiseHandler<T> pushes) {
      threads.add(Thread.currentThread().getName());
      return client.sendAsync(request, handler, pushes);
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(
        HttpRequest request, HttpResponse.BodyHandler<T> handler) {
      return sendAsync(request, handler, null);
    }

    @Override
    public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
        throws IOException, InterruptedException {
      return client.send(request, handler);
    }

    @Override
    public Optional<CookieHandler> cookieHandler() {
      return client.cookieHandler();
    }

    @Override
    public Optional<Duration> connectTimeout() {
      return client.connectTimeout();
    }

    @Override
    public Redirect followRedirects() {
      return client.followRedirects();
    }

    @Override
    public Optional<ProxySelector> proxy() {
      return client.proxy();
    }

    @Override
    public SSLContext sslContext() {
      return client.sslContext();
    }

    @Override
    public SSLParameters sslParameters() {
      return client.sslParameters();
    }

    @Override
    public Optional<Authenticator> authenticator() {
      return client.authenticator();
    }

    @Override
    public Version version() {
      return client.version();
    }

    @Override
    public Optional<java.util.concurrent.Executor> executor() {
      return client.executor();
    }
  }
}
