package dev.pacer.jdkhttp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.testing.FakeTime;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Each hop's answer deadline against a server that accepts, reads the request and never answers.
 * The HTTP client is real, so this runs on real time, with deadlines of a second or two and a
 * margin of 1.5 s; pacing is on a fake clock.
 */
class PacedHttpClientDeadlineTest {

  private static final Duration MARGIN = Duration.ofMillis(1500);

  private final FakeTime time = new FakeTime();
  private final HttpClient bare =
      HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();

  /** Released once for each connection the client closed while the server kept silent. */
  private final Semaphore closedByClient = new Semaphore(0);

  private ServerSocket silent;
  private Thread accepting;
  private DestinationLimiter limiter;

  @BeforeEach
  void start() throws IOException {
    silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
    accepting = new Thread(this::acceptAndSayNothing, "silent-server");
    accepting.setDaemon(true);
    accepting.start();
    limiter =
        new LimiterRegistry(new LocalCursor(time), time)
            .limiter(
                Destination.builder("deadline-client-test")
                    .ratePerSecond(10)
                    .maxConcurrency(1)
                    .build());
  }

  @AfterEach
  void stop() throws IOException {
    silent.close();
  }

  private void acceptAndSayNothing() {
    while (!silent.isClosed()) {
      Socket s;
      try {
        s = silent.accept();
      } catch (IOException e) {
        return;
      }
      Thread reading =
          new Thread(
              () -> {
                try (s;
                    InputStream in = s.getInputStream()) {
                  while (in.read() != -1) {
                    // Reads the request, and whatever comes after it, until the client closes.
                  }
                  closedByClient.release();
                } catch (IOException e) {
                  closedByClient.release();
                }
              },
              "silent-connection");
      reading.setDaemon(true);
      reading.start();
    }
  }

  private URI uri() {
    return URI.create("http://127.0.0.1:" + silent.getLocalPort() + "/never");
  }

  @Test
  void byDefaultEveryAnswerHasADeadlineWhichCanBeSetOrTurnedOff() {
    assertThat(PacedHttpClient.DEFAULT_ANSWER_TIMEOUT).isEqualTo(Duration.ofSeconds(30));
    assertThat(PacedHttpClient.of(bare, limiter).answerTimeout())
        .contains(PacedHttpClient.DEFAULT_ANSWER_TIMEOUT);
    assertThat(
            PacedHttpClient.builder(bare, LimiterLookup.only(limiter))
                .answerTimeout(Duration.ofSeconds(5))
                .build()
                .answerTimeout())
        .contains(Duration.ofSeconds(5));
    assertThat(
            PacedHttpClient.builder(bare, LimiterLookup.only(limiter))
                .noAnswerTimeout()
                .build()
                .answerTimeout())
        .isEmpty();
  }

  @Test
  void aServerThatNeverAnswersFailsAtTheAnswerTimeoutAndGetsItsConnectionClosed() throws Exception {
    PacedHttpClient client =
        PacedHttpClient.builder(bare, LimiterLookup.only(limiter))
            .answerTimeout(Duration.ofMillis(500))
            .build();
    long start = System.nanoTime();
    assertThatThrownBy(
            () ->
                client.send(
                    HttpRequest.newBuilder(uri()).build(), HttpResponse.BodyHandlers.ofString()))
        .isInstanceOf(HttpTimeoutException.class)
        .hasMessage("no complete response from " + uri() + " within 500 ms");
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .isBetween(Duration.ofMillis(500), Duration.ofMillis(500).plus(MARGIN));
    assertThat(closedByClient.tryAcquire(MARGIN.toMillis(), TimeUnit.MILLISECONDS))
        .as("the server saw its connection closed")
        .isTrue();
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
  }

  @Test
  void aRequestsOwnTimeoutTakesThePlaceOfTheClients() throws Exception {
    PacedHttpClient client =
        PacedHttpClient.builder(bare, LimiterLookup.only(limiter))
            .answerTimeout(Duration.ofMillis(300))
            .build();
    Duration own = Duration.ofMillis(1500);
    HttpRequest patient = HttpRequest.newBuilder(uri()).timeout(own).build();

    long start = System.nanoTime();
    assertThatThrownBy(() -> client.send(patient, HttpResponse.BodyHandlers.ofString()))
        .isInstanceOf(HttpTimeoutException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("send")
        .isBetween(own, own.plus(MARGIN));

    start = System.nanoTime();
    assertThatThrownBy(
            () ->
                client
                    .sendAsync(patient, HttpResponse.BodyHandlers.ofString())
                    .get(10, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(HttpTimeoutException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("sendAsync")
        .isBetween(own, own.plus(MARGIN));

    PacedHttpClient none =
        PacedHttpClient.builder(bare, LimiterLookup.only(limiter)).noAnswerTimeout().build();
    Duration hasty = Duration.ofMillis(300);
    start = System.nanoTime();
    assertThatThrownBy(
            () ->
                none.send(
                    HttpRequest.newBuilder(uri()).timeout(hasty).build(),
                    HttpResponse.BodyHandlers.ofString()))
        .isInstanceOf(HttpTimeoutException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("without the client's")
        .isBetween(hasty, hasty.plus(MARGIN));
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
  }
}
