package dev.pacer.spring;

import dev.pacer.PacedHttpClient;
import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * The paced client as Spring's {@code JdkClientHttpRequestFactory} calls it. Spring's JDK request
 * always calls {@code sendAsync} and then waits for the future on the same thread; {@link
 * PacedHttpClient} paces in {@code send}, and its {@code sendAsync} is not supported yet (an
 * asynchronous turn needs the limiter to hand out turns without blocking a thread). So here {@code
 * sendAsync} runs the paced client's {@code send} on the calling thread and returns the finished
 * future, which is what Spring would have waited for. The turn, the request, the redirects and
 * the classification of the answer are all the paced client's; this class adds nothing to them,
 * and goes when the paced client's own {@code sendAsync} exists.
 *
 * <p>One consequence: Spring's read timeout, which it starts when {@code sendAsync} returns, then
 * bounds only the reading of the body; the wait for the answer is bounded by the paced client's
 * {@code answerTimeout} (set from the same setting), and the wait for the turn by nothing, as with
 * {@code send}.
 */
final class SendingOnTheCallersThread extends HttpClient {

  private final PacedHttpClient paced;

  SendingOnTheCallersThread(PacedHttpClient paced) {
    this.paced = Objects.requireNonNull(paced, "paced");
  }

  @Override
  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    return paced.send(request, handler);
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request,
      HttpResponse.BodyHandler<T> handler) {
    try {
      return CompletableFuture.completedFuture(paced.send(request, handler));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return CompletableFuture.failedFuture(e);
    } catch (IOException | RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Server push is HTTP/2's, and a pushed response would arrive without a turn: not offered. */
  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request,
      HttpResponse.BodyHandler<T> handler, HttpResponse.PushPromiseHandler<T> pushPromises) {
    return sendAsync(request, handler);
  }

  @Override
  public Optional<CookieHandler> cookieHandler() {
    return paced.cookieHandler();
  }

  @Override
  public Optional<Duration> connectTimeout() {
    return paced.connectTimeout();
  }

  @Override
  public HttpClient.Redirect followRedirects() {
    return paced.followRedirects();
  }

  @Override
  public Optional<ProxySelector> proxy() {
    return paced.proxy();
  }

  @Override
  public SSLContext sslContext() {
    return paced.sslContext();
  }

  @Override
  public SSLParameters sslParameters() {
    return paced.sslParameters();
  }

  @Override
  public Optional<Authenticator> authenticator() {
    return paced.authenticator();
  }

  @Override
  public HttpClient.Version version() {
    return paced.version();
  }

  @Override
  public Optional<Executor> executor() {
    return paced.executor();
  }

  @Override
  public String toString() {
    return "SendingOnTheCallersThread{" + paced + "}";
  }
}
