package dev.pacer.jdkhttp;

import dev.pacer.Answer;
import dev.pacer.AsyncPools;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LockedOutException;
import dev.pacer.http.AddressPolicy;
import dev.pacer.http.Origins;
import dev.pacer.http.WarmUp;
import dev.pacer.jdkhttp.internal.AsyncExchange;
import dev.pacer.jdkhttp.internal.Exchanges;
import dev.pacer.jdkhttp.internal.HopSenders;
import dev.pacer.jdkhttp.internal.Redirects;
import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * A {@link HttpClient} that paces every request it sends: it is one (hand it to anything that takes
 * a {@code java.net.http.HttpClient}, Spring's {@code JdkClientHttpRequestFactory} among them), and
 * sends through a delegate client after taking a turn from the request's {@link
 * DestinationLimiter}.
 *
 * <pre>{@code
 * HttpClient client = PacedHttpClient.builder(
 *         HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build(),
 *         LimiterLookup.byHost(registry, host -> Optional.ofNullable(destinations.get(host))))
 *     .followRedirects(HttpClient.Redirect.NORMAL)
 *     .build();
 * }</pre>
 *
 * <h2>A request</h2>
 *
 * <ol>
 *   <li>The {@link LimiterLookup} names the limiter for the request's URI; a request it does not
 *       pace is sent as the delegate would send it.
 *   <li>{@link #send} blocks the calling thread until its turn ({@link
 *       DestinationLimiter#acquire()}); {@link #sendAsync} returns at once, and its request waits
 *       for the turn with no thread held ({@link DestinationLimiter#acquireAsync()}). If the
 *       destination is locked out, {@code send} throws {@link LockedOutException} and {@code
 *       sendAsync}'s future fails with it: nothing is sent.
 *   <li>The request goes to the delegate: {@code send}'s through the delegate's {@code send}, as
 *       the delegate alone would send it, and {@code sendAsync}'s through its {@code sendAsync}.
 *       (The JDK's client writes either on threads of its own, and its {@code sendAsync} also
 *       starts the exchange there and hands the answer to the common pool, one more thread
 *       hand-over per request than its {@code send}.) When the answer's headers arrive, its status
 *       and {@code Retry-After} go to {@link DestinationLimiter#noteAnswer}, the one classification
 *       every Pacer client shares. The answer is returned to the caller as it is, whatever it was:
 *       a 429 is a 429 response, and the limiter has already backed off (and with a {@code
 *       Retry-After} paused the fleet); after a 403 the limiter is locked out, so this response is
 *       returned and every later request to the destination throws {@link LockedOutException}
 *       before it is sent.
 *   <li>The slot (the destination's concurrency permit) is released when the response's body ends:
 *       received in full, failed, or cancelled. For a body read into memory or a file, that is
 *       before {@code send} returns; a streamed body ({@code BodyHandlers.ofInputStream()}) is
 *       received about as fast as it is read, and closing the stream cancels it. A streamed body
 *       neither read nor closed holds its permit, as it holds its connection. A request that fails
 *       releases it at once.
 * </ol>
 *
 * <h2>Asynchronous: the same hops, no thread waiting</h2>
 *
 * {@link #sendAsync} takes the steps above, hop by hop, as {@code send} does (one {@code Hop} class
 * holds them, and two short drivers wait for them: a loop that blocks, and a composition of
 * futures). After its turn, a hop is sent on the delegate's {@linkplain HttpClient#executor()
 * executor} if it was built with one, or else on two send threads of Pacer's ({@link AsyncPools}),
 * the thread whose check found the turn in time ({@link
 * DestinationLimiter#acquireAsync(Executor)}): never on the scheduler's thread, which completes the
 * turn, because a send there delays every turn of the JVM queued behind it, nor on the round-trip
 * executor, whose queue holds later turns' reservations. Cancelling the future before the turn
 * gives back the permit, or the place in its queue; after the send, it cancels the exchange (Java
 * 16+ closes its connection), which releases the permit. Server pushes ({@code sendAsync(request,
 * handler, pushPromises)}) go to the push promise handler as the delegate delivers them, with no
 * turn: a pushed response is not a request sent to the destination.
 *
 * <h2>Redirects: followed here, a turn per hop</h2>
 *
 * The JDK's client follows redirects inside one {@code send}, where no decorator sees the hops: a
 * chain of three would be three requests to the destination in one turn. So the delegate must not
 * follow redirects ({@link HttpClient.Redirect#NEVER}; the builder refuses one that does), and this
 * client follows them itself, as {@link Builder#followRedirects} says ({@code NEVER} by default, as
 * the JDK's; {@code NORMAL} and {@code ALWAYS} as the JDK's client means them; at most {@link
 * Builder#maxRedirects}, default 5). Each hop asks the lookup again and takes its own turn, from
 * the limiter of the host it goes to. A hop answered with anything but a {@linkplain Answer#CLEAN
 * clean} status is not followed further. The body of a hop followed is dropped in the background
 * (at most 64 KiB and 1 s of it are read to keep the connection, past either it is closed), holding
 * the hop's slot until it ends; the caller's body handler sees only the final answer. A 303, or a
 * 301 or 302 to a POST, is followed with a GET, as the JDK's client does.
 *
 * <p>A destination is not trusted with the caller's other hosts. A hop to another origin goes
 * without the request's {@code Authorization}, {@code Proxy-Authorization} and {@code Cookie}
 * headers, and a 307 or 308 that would repeat a request body at another origin is not followed
 * ({@link Origins}). Under every policy, a hop from a public host into an internal network (a
 * loopback, private, link-local or metadata address) is not followed: the requested host is
 * classified once, just before the first hop is sent, and each hop's host is resolved and judged
 * against it ({@link AddressPolicy}). A redirect not followed is returned as it is.
 *
 * <h2>Deadline</h2>
 *
 * Each hop's answer must be complete within its deadline (for a body read into memory or a file,
 * the body included), or the exchange is cancelled, which closes its connection, and {@code send}
 * throws {@link HttpTimeoutException} ({@code sendAsync}'s future fails with it): a server that
 * never answers, or a body trickling one byte at a time, would otherwise hold the caller and the
 * destination's permit for as long as the server likes. The deadline is the request's own {@link
 * HttpRequest#timeout()} if it has one, and otherwise the client's {@link Builder#answerTimeout}
 * ({@link #DEFAULT_ANSWER_TIMEOUT} unless set; {@link Builder#noAnswerTimeout()} sets none, and
 * such a request waits as the delegate would). {@code send} cancels the exchange by interrupting
 * its own thread, waiting in the delegate's {@code send}, which cancels its exchange when
 * interrupted, as the JDK's client does; {@code sendAsync} cancels the delegate's future.
 *
 * <h2>What it does not do</h2>
 *
 * {@link #newWebSocketBuilder()} is refused: a WebSocket opened past the limiter would not be
 * paced; open it on the delegate. Closing this client (Java 21+) does not close the delegate:
 * whoever built the delegate owns it.
 */
public final class PacedHttpClient extends HttpClient {

  /**
   * The deadline of each hop's whole answer when neither the request nor the builder sets one: long
   * enough for a slow page, short enough that a server that never answers does not keep a thread
   * and a permit.
   */
  public static final Duration DEFAULT_ANSWER_TIMEOUT = Duration.ofSeconds(30);

  private final HttpClient delegate;
  private final HttpClient.Redirect followRedirects;
  private final Optional<Duration> answerTimeout;
  private final Exchanges exchanges;

  private PacedHttpClient(Builder b) {
    this.delegate = b.delegate;
    this.followRedirects = b.followRedirects;
    this.answerTimeout = b.answerTimeout;
    this.exchanges =
        new Exchanges(
            b.delegate,
            b.limiters,
            Redirects.like(b.followRedirects, b.maxRedirects, b.addresses),
            b.answerTimeout,
            b.listener.map(
                listener ->
                    (uri, hop, turnNanos, sentNanos, sentEpochMicros, status) ->
                        listener.accept(
                            new SentRequest(
                                uri, hop, turnNanos, sentNanos, sentEpochMicros, status))));
  }

  /**
   * A client sending through {@code delegate}, which must not follow redirects itself, paced by the
   * limiter {@code limiters} names for each request.
   *
   * @param delegate the client that sends, built with {@link HttpClient.Redirect#NEVER}
   * @param limiters which limiter paces each request, asked again for every redirect hop
   * @return a builder; {@link Builder#build()} makes the client
   */
  public static Builder builder(HttpClient delegate, LimiterLookup limiters) {
    return new Builder(delegate, limiters);
  }

  /**
   * Every request through {@code delegate} paced by {@code limiter}; redirects not followed.
   *
   * @param delegate the client that sends, built with {@link HttpClient.Redirect#NEVER}
   * @param limiter the limiter pacing every request
   * @return the client
   */
  public static PacedHttpClient of(HttpClient delegate, DestinationLimiter limiter) {
    return builder(delegate, LimiterLookup.only(limiter)).build();
  }

  /**
   * Pays a cold JVM's first-request costs before the first turn, sending nothing to any destination
   * ({@link WarmUp}): one GET through this client's {@code send} and one through its {@code
   * sendAsync}, each taking the way a paced request takes but no turn, through the delegate's
   * {@code send} and {@code sendAsync}, to a throwaway server on 127.0.0.1; then, for each https
   * URL of {@code destinations}, the TLS stack, and the resolution of each host name. Call it once,
   * before the first request; failures are logged and ignored, since a cold first request is
   * slower, not wrong. Without it, a cold JVM's first requests wait for that work together and
   * reach the destination together, more than the ceiling in one second (docs/integrations.md, "A
   * cold JVM"); and what this client does between a turn and its send (a hop's deadline starts the
   * JDK's delay scheduler) would load its classes after the first turn began.
   *
   * @param destinations URLs of the destinations this client will send to, for their scheme and
   *     host (none is needed for the client's own warm-up)
   * @throws InterruptedException if interrupted during the warm-up
   */
  public void warmUp(URI... destinations) throws InterruptedException {
    if (delegate.executor().isEmpty()) {
      HopSenders.prestart();
    }
    WarmUp.run(
        loopback -> {
          exchanges.sendUnpaced(HttpRequest.newBuilder(loopback).build());
        },
        destinations);
  }

  /**
   * The deadline of each hop's whole answer for a request without a {@linkplain
   * HttpRequest#timeout() timeout} of its own.
   *
   * @return the builder's {@code answerTimeout}, {@link #DEFAULT_ANSWER_TIMEOUT} unless set, or
   *     empty after {@link Builder#noAnswerTimeout()}
   */
  public Optional<Duration> answerTimeout() {
    return answerTimeout;
  }

  /**
   * The client requests are sent through.
   *
   * @return the delegate given to the builder
   */
  public HttpClient delegate() {
    return delegate;
  }

  @Override
  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    Objects.requireNonNull(handler, "handler");
    return exchanges.exchange(request, uri -> handler, 1).response();
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    return sendAsync(request, handler, null);
  }

  /**
   * As {@link #send}, with no thread waiting for the turn: see the class comment. Server pushes go
   * to {@code pushPromises} as the delegate delivers them, with no turn: a pushed response is not a
   * request sent to the destination.
   */
  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromises) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(handler, "handler");
    return AsyncExchange.send(exchanges, request, handler, pushPromises);
  }

  /** This client's redirect policy (the delegate's is always {@code NEVER}). */
  @Override
  public HttpClient.Redirect followRedirects() {
    return followRedirects;
  }

  /** Refused: a WebSocket opened past the limiter would not be paced; open it on the delegate. */
  @Override
  public WebSocket.Builder newWebSocketBuilder() {
    throw new UnsupportedOperationException(
        "a WebSocket opened through PacedHttpClient would"
            + " not be paced: open it on the delegate client");
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
  public HttpClient.Version version() {
    return delegate.version();
  }

  @Override
  public Optional<Executor> executor() {
    return delegate.executor();
  }

  @Override
  public String toString() {
    return "PacedHttpClient{" + delegate + ", redirects " + followRedirects + "}";
  }

  /** Builder for {@link PacedHttpClient}. */
  public static final class Builder {
    private final HttpClient delegate;
    private final LimiterLookup limiters;
    private HttpClient.Redirect followRedirects = HttpClient.Redirect.NEVER;
    private int maxRedirects = 5;
    private AddressPolicy addresses = AddressPolicy.system();
    private Optional<Duration> answerTimeout = Optional.of(DEFAULT_ANSWER_TIMEOUT);
    private Optional<Consumer<SentRequest>> listener = Optional.empty();

    private Builder(HttpClient delegate, LimiterLookup limiters) {
      this.delegate = Objects.requireNonNull(delegate, "delegate");
      this.limiters = Objects.requireNonNull(limiters, "limiters");
      if (delegate.followRedirects() != HttpClient.Redirect.NEVER) {
        throw new IllegalArgumentException(
            "the delegate client must not follow redirects (it"
                + " follows "
                + delegate.followRedirects()
                + "): a redirect it followed would take"
                + " no turn. Build it with Redirect.NEVER and set followRedirects on"
                + " PacedHttpClient.Builder, which follows each hop with a turn of its own");
      }
    }

    /**
     * Which redirects this client follows, each hop with its own turn: as the JDK's client means
     * {@code policy}, but never from a public host into an internal network, nor with a body or the
     * caller's credentials to another origin (see the class comment). Default {@code NEVER}.
     *
     * @param policy which redirects to follow
     * @return this builder
     */
    public Builder followRedirects(HttpClient.Redirect policy) {
      this.followRedirects = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * The most redirects followed per request (default 5); the next one is returned as is.
     *
     * @param maxRedirects 0 or more
     * @return this builder
     */
    public Builder maxRedirects(int maxRedirects) {
      if (maxRedirects < 0) {
        throw new IllegalArgumentException("maxRedirects must be >= 0, got " + maxRedirects);
      }
      this.maxRedirects = maxRedirects;
      return this;
    }

    /** The address policy of the redirects this builder's {@code followRedirects} follows. */
    Builder addressPolicy(AddressPolicy addresses) {
      this.addresses = Objects.requireNonNull(addresses, "addresses");
      return this;
    }

    /**
     * Each hop's whole answer (a body read into memory or a file included) within {@code timeout},
     * or the exchange is cancelled and {@code send} throws {@link HttpTimeoutException} ({@code
     * sendAsync}'s future fails with it). A request's own {@linkplain HttpRequest#timeout()
     * timeout} takes its place. Default {@link PacedHttpClient#DEFAULT_ANSWER_TIMEOUT}.
     *
     * @param timeout more than zero
     * @return this builder
     */
    public Builder answerTimeout(Duration timeout) {
      if (timeout == null || timeout.isZero() || timeout.isNegative()) {
        throw new IllegalArgumentException("answerTimeout must be > 0, got " + timeout);
      }
      this.answerTimeout = Optional.of(timeout);
      return this;
    }

    /**
     * No deadline for a request without a {@linkplain HttpRequest#timeout() timeout} of its own: it
     * waits for its answer as the delegate would, for as long as the server likes, holding its
     * thread (for {@code send}) and the destination's permit meanwhile.
     *
     * @return this builder
     */
    public Builder noAnswerTimeout() {
      this.answerTimeout = Optional.empty();
      return this;
    }

    /**
     * Called with every paced request sent, redirect hops included, once its status is known or it
     * failed: for {@code send} on the calling thread, for {@code sendAsync} on the thread that
     * completes the answer (the delegate's); the request's slot may still be held, so keep it
     * quick. If it throws, requests go on (logged once at WARN).
     *
     * @param listener called with each paced request sent
     * @return this builder
     */
    public Builder onRequest(Consumer<SentRequest> listener) {
      this.listener = Optional.of(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    /**
     * The client.
     *
     * @return a client with this builder's settings
     */
    public PacedHttpClient build() {
      return new PacedHttpClient(this);
    }
  }
}
