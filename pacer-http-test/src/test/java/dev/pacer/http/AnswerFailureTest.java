package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.http.hc5.PacingExecChainHandler;
import dev.pacer.http.okhttp.PacingInterceptor;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.FakeTime;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
import okhttp3.EventListener;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * An answer whose classification throws ({@link DestinationLimiter#noteAnswer}; here a cursor
 * breaks its never-throws contract when asked to record a {@code Retry-After}, with an exception or
 * an error): the call fails with what was thrown, the response it had received is closed, its
 * connection goes back to the client's pool, and its slot to the limiter. The destination allows
 * one request in flight, so the next request gets its turn only if that slot was released: every
 * test runs under a 20-s bound.
 */
class AnswerFailureTest {

  private static final Duration BOUND = Duration.ofSeconds(20);

  /** What the cursor throws: an exception, or an error. */
  enum Failure {
    EXCEPTION(IllegalStateException.class) {
      @Override
      void raise() {
        throw new IllegalStateException(MESSAGE);
      }
    },
    ERROR(AssertionError.class) {
      @Override
      void raise() {
        throw new AssertionError(MESSAGE);
      }
    };

    static final String MESSAGE = "the pause store failed";

    final Class<? extends Throwable> type;

    Failure(Class<? extends Throwable> type) {
      this.type = type;
    }

    abstract void raise();
  }

  /** A cursor whose store fails, against its contract, when it records a pause. */
  private static final class FailingToPause implements Cursor {
    private final LocalCursor local;
    private final Failure failure;

    FailingToPause(FakeTime time, Failure failure) {
      this.local = new LocalCursor(time);
      this.failure = failure;
    }

    @Override
    public Reservation reserve(String name, Duration interval, Duration notBefore) {
      return local.reserve(name, interval, notBefore);
    }

    @Override
    public Reservation tryReserve(
        String name, Duration interval, Duration notBefore, Duration maxWait) {
      return local.tryReserve(name, interval, notBefore, maxWait);
    }

    @Override
    public boolean pause(String name, Duration delay) {
      failure.raise();
      return false;
    }

    @Override
    public void clear(String name) {
      local.clear(name);
    }
  }

  private final FakeTime time = new FakeTime();
  private DoorServer server;

  @BeforeEach
  void start() throws Exception {
    server = new DoorServer(HopPaths::answer);
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private DestinationLimiter limiter(Failure failure) {
    return new LimiterRegistry(new FailingToPause(time, failure), time)
        .limiter(Destination.builder("answer-failure").ratePerSecond(10).maxConcurrency(1).build());
  }

  /**
   * The response is closed, which reads its short body to the end: the connection is idle in the
   * pool and the next request reuses it.
   */
  @ParameterizedTest
  @EnumSource(Failure.class)
  void okHttpClosesTheResponseAndItsConnectionGoesBackToThePool(Failure failure) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          AtomicInteger connections = new AtomicInteger();
          OkHttpClient client =
              new OkHttpClient.Builder()
                  .eventListener(
                      new EventListener() {
                        @Override
                        public void connectStart(
                            Call call, InetSocketAddress address, Proxy proxy) {
                          connections.incrementAndGet();
                        }
                      })
                  .addNetworkInterceptor(PacingInterceptor.of(limiter(failure)))
                  .build();
          try {
            assertThatThrownBy(
                    () ->
                        client
                            .newCall(
                                new Request.Builder()
                                    .url(HopPaths.uri(server, "/status/429/1").toURL())
                                    .build())
                            .execute())
                .isInstanceOf(failure.type)
                .hasMessage(Failure.MESSAGE);
            assertThat(client.connectionPool().idleConnectionCount()).isEqualTo(1);
            try (Response next =
                client
                    .newCall(
                        new Request.Builder().url(HopPaths.uri(server, "/ok/next").toURL()).build())
                    .execute()) {
              assertThat(next.body().string()).isEqualTo("ok /ok/next");
            }
            assertThat(connections).as("the next request reused the connection").hasValue(1);
          } finally {
            client.dispatcher().executorService().shutdown();
            client.connectionPool().evictAll();
          }
        });
  }

  /**
   * The connection is closed rather than drained (the body is the destination's to make endless),
   * and its lease ends.
   */
  @ParameterizedTest
  @EnumSource(Failure.class)
  void apacheClosesTheResponseAndItsConnectionIsNoLongerLeased(Failure failure) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          PoolingHttpClientConnectionManager pool =
              PoolingHttpClientConnectionManagerBuilder.create().build();
          try (CloseableHttpClient client =
              PacingExecChainHandler.of(limiter(failure))
                  .addTo(HttpClients.custom().setConnectionManager(pool))
                  .build()) {
            assertThatThrownBy(
                    () ->
                        client.execute(
                            new HttpGet(HopPaths.uri(server, "/status/429/1")),
                            response -> response.getCode()))
                .isInstanceOf(failure.type)
                .hasMessage(Failure.MESSAGE);
            assertThat(pool.getTotalStats().getLeased())
                .as("no connection is left leased")
                .isZero();
            String next =
                client.execute(
                    new HttpGet(HopPaths.uri(server, "/ok/next")),
                    response -> EntityUtils.toString(response.getEntity()));
            assertThat(next).isEqualTo("ok /ok/next");
            assertThat(pool.getTotalStats().getLeased()).isZero();
          }
        });
  }
}
