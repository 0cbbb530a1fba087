package dev.pacer.jdkhttp;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterListener;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.http.TestLoopbackServer;
import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * The child JVM of {@link FirstPacedSendTest}: a {@link PacedHttpClient} warmed up with its {@link
 * PacedHttpClient#warmUp} alone, then one {@code send} and one {@code sendAsync}, each paced, to a
 * server on 127.0.0.1. It prints {@link #WARMED} after the warm-up, {@link #GRANTED} as each turn
 * is handed over (a listener of the registry, which fires after the check for late turns) and
 * {@link #SENDING} as the delegate is asked to send. Run with {@code -verbose:class}, its output
 * shows which classes loaded between a turn and its request leaving.
 */
final class FirstPacedSend {

  static final String WARMED = "first-paced-send: warmed up";
  static final String GRANTED = "first-paced-send: granted";
  static final String SENDING = "first-paced-send: delegate sends";

  private FirstPacedSend() {}

  public static void main(String[] args) throws Exception {
    LimiterRegistry registry = new LimiterRegistry(new LocalCursor());
    registry.addListener(
        new LimiterListener() {
          @Override
          public void turn(Turn turn) {
            System.out.println(GRANTED);
          }
        });
    DestinationLimiter limiter =
        registry.limiter(
            Destination.builder("first-paced-send").ratePerSecond(10).maxConcurrency(1).build());
    try (TestLoopbackServer server = new TestLoopbackServer()) {
      PacedHttpClient client =
          PacedHttpClient.of(
              new Marking(
                  HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build()),
              limiter);
      client.warmUp(server.uri());
      System.out.println(WARMED);
      HttpRequest get = HttpRequest.newBuilder(server.uri()).build();
      client.send(get, HttpResponse.BodyHandlers.discarding());
      client.sendAsync(get, HttpResponse.BodyHandlers.discarding()).get(10, TimeUnit.SECONDS);
    }
  }

  /** A client that prints {@link #SENDING} as it is asked to send, then sends through another. */
  private static final class Marking extends HttpClient {
    private final HttpClient delegate;

    Marking(HttpClient delegate) {
      this.delegate = delegate;
    }

    @Override
    public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
        throws IOException, InterruptedException {
      System.out.println(SENDING);
      return delegate.send(request, handler);
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(
        HttpRequest request, HttpResponse.BodyHandler<T> handler) {
      System.out.println(SENDING);
      return delegate.sendAsync(request, handler);
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(
        HttpRequest request,
        HttpResponse.BodyHandler<T> handler,
        HttpResponse.PushPromiseHandler<T> pushes) {
      System.out.println(SENDING);
      return delegate.sendAsync(request, handler, pushes);
    }

    @Override
    public Optional<CookieHandler> cookieHandler() {
      return delegate.cookieHandler();
    }

    @Override
    public Optional<Duration> connectTimeout() {
      return delegate.connectTimeout();
    }

    @Override
    public Redirect followRedirects() {
      return delegate.followRedirects();
    }

    @Override
    public Optional<ProxySelector> proxy() {
      return delegate.proxy();
    }

    @Override
    public SSLContext sslContext() {
      return delegate.sslContext();
    }

    @Override
    public SSLParameters sslParameters() {
      return delegate.sslParameters();
    }

    @Override
    public Optional<Authenticator> authenticator() {
      return delegate.authenticator();
    }

    @Override
    public Version version() {
      return delegate.version();
    }

    @Override
    public Optional<Executor> executor() {
      return delegate.executor();
    }
  }
}
