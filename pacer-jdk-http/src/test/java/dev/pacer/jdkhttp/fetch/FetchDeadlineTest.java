package dev.pacer.jdkhttp.fetch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterProbe;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.testing.FakeTime;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole-answer deadline against a server that trickles its body one byte every 100 ms for 10 s.
 * This is an integration test of the HTTP client, so it runs on real time, kept short: a 500 ms
 * deadline must fail the fetch within 2 s, close the connection, and leave the fetcher ready for
 * the next fetch. Pacing is on a fake clock, as elsewhere.
 */
class FetchDeadlineTest {

  private static final Duration DEADLINE = Duration.ofMillis(500);

  private final FakeTime time = new FakeTime();
  private final CountDownLatch trickleCut = new CountDownLatch(1);
  private ServerSocket trickler;
  private Thread trickling;
  private HttpServer healthy;
  private DestinationLimiter limiter;

  @BeforeEach
  void start() throws IOException {
    trickler = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    trickling = new Thread(this::trickle, "trickler");
    trickling.setDaemon(true);
    trickling.start();
    healthy = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    healthy.createContext(
        "/",
        exchange -> {
          byte[] body = "ok".getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    healthy.start();
    limiter =
        new LimiterRegistry(new LocalCursor(time), time)
            .limiter(
                Destination.builder("deadline-test").ratePerSecond(10).maxConcurrency(1).build());
  }

  @AfterEach
  void stop() throws IOException {
    trickler.close();
    trickling.interrupt();
    healthy.stop(0);
  }

  /** Answers one request with 200 and a 100-byte body, one byte per 100 ms. */
  private void trickle() {
    try (Socket s = trickler.accept()) {
      InputStream in = s.getInputStream();
      int matched = 0;
      int c;
      while (matched < 4 && (c = in.read()) != -1) {
        matched = c == "\r\n\r\n".charAt(matched) ? matched + 1 : (c == '\r' ? 1 : 0);
      }
      OutputStream out = s.getOutputStream();
      out.write(
          "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      for (int i = 0; i < 100; i++) {
        out.write('x');
        out.flush();
        Thread.sleep(100);
      }
    } catch (IOException e) {
      trickleCut.countDown(); // the client closed the connection under the trickle
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private URI trickling() {
    return URI.create("http://127.0.0.1:" + trickler.getLocalPort() + "/slow");
  }

  private URI healthy() {
    return URI.create("http://127.0.0.1:" + healthy.getAddress().getPort() + "/ok");
  }

  @Test
  void aTricklingBodyFailsAtTheDeadlineAndFreesTheThreadAndTheConnection() throws Exception {
    DestinationFetcher fetcher =
        DestinationFetcher.builder(limiter).requestTimeout(DEADLINE).build();
    long start = System.nanoTime();
    assertThatThrownBy(() -> fetcher.fetch(trickling()))
        .isInstanceOf(FetchFailedException.class)
        .hasMessageContaining("no complete response from " + trickling() + " within 500 ms");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
    assertThat(trickleCut.await(2, TimeUnit.SECONDS))
        .as("the server saw its connection closed")
        .isTrue();
    assertThat(LimiterProbe.availablePermits(limiter)).isEqualTo(1);
    assertThat(fetcher.fetch(healthy()).body()).isEqualTo("ok".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aTricklingBodyStreamedToAFileLeavesNoFile(@TempDir Path dir) throws Exception {
    DestinationFetcher fetcher =
        DestinationFetcher.builder(limiter).requestTimeout(DEADLINE).build();
    Path file = dir.resolve("slow");
    long start = System.nanoTime();
    assertThatThrownBy(() -> fetcher.fetchTo(trickling(), file))
        .isInstanceOf(FetchFailedException.class)
        .hasMessageContaining("within 500 ms");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
    assertThat(file).doesNotExist();
    Path next = dir.resolve("ok");
    fetcher.fetchTo(healthy(), next);
    assertThat(next).hasContent("ok");
  }
}
