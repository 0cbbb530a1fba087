package dev.pacer;

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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link HttpClient} that paces every request it sends: it is one (hand it to anything that
 * takes a {@code java.net.http.HttpClient}, Spring's {@code JdkClientHttpRequestFactory} among
 * them), and sends through a delegate client after taking a turn from the request's {@link
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
 *   <li>{@link DestinationLimiter#acquire()} blocks the calling thread until its turn (and throws
 *       {@link LockedOutException} if the destination is locked out: nothing is sent).
 *   <li>The request goes to the delegate. When the answer's headers arrive, its status and {@code
 *       Retry-After} go to {@link DestinationLimiter#noteAnswer}, the one classification every
 *       Pacer client shares. The answer is returned to the caller as it is, whatever it was: a 429
 *       is a 429 response, and the limiter has already backed off (and with a {@code Retry-After}
 *       paused the fleet); after a 403 the limiter is locked out, so this response is returned and
 *       every later request to the destination throws {@link LockedOutException} before it is
 *       sent.
 *   <li>The slot (the destination's concurrency permit) is released when the response's body
 *       ends: received in full, failed, or cancelled. For a body read into memory or a file, that
 *       is before {@code send} returns; a streamed body ({@code BodyHandlers.ofInputStream()}) is
 *       received about as fast as it is read, and closing the stream cancels it. A streamed body
 *       neither read nor closed holds its permit, as it holds its connection. A request that
 *       fails releases it at once.
 * </ol>
 *
 * <h2>Redirects: followed here, a turn per hop</h2>
 *
 * The JDK's client follows redirects inside one {@code send}, where no decorator sees the hops: a
 * chain of three would be three requests to the destination in one turn. So the delegate must not
 * follow redirects ({@link HttpClient.Redirect#NEVER}; the builder refuses one that does), and
 * this client follows them itself, as {@link Builder#followRedirects} says ({@code NEVER} by
 * default, as the JDK's; {@code NORMAL} and {@code ALWAYS} as the JDK's client means them; at most
 * {@link Builder#maxRedirects}, default 5). Each hop asks the lookup again and takes its own turn,
 * from the limiter of the host it goes to; the previous hop's slot is released first, so a chain
 * holds one permit at a time. A hop answered with anything but a {@linkplain Answer#CLEAN clean}
 * status is not followed further. The body of a hop followed is dropped in the background ({@link
 * DiscardedBody}); the caller's body handler sees only the final answer. A 303, or a 301 or 302
 * to a POST, is followed with a GET, as the JDK's client does.
 *
 * <h2>Deadline</h2>
 *
 * With {@link Builder#answerTimeout}, each hop's answer must be complete within it (for a body read
 * into memory or a file, the body included), or the exchange is cancelled, which closes its
 * connection, and {@code send} throws {@link HttpTimeoutException}: a body trickling one byte at a
 * time would otherwise hold the destination's permit for as long as the server likes. Without one
 * (the default), as the delegate does.
 *
 * <h2>What it does not do</h2>
 *
 * {@link #newWebSocketBuilder()} is refused: a WebSocket opened past the limiter would not be
 * paced; open it on the delegate. Closing this client (Java 21+) does not close the delegate:
 * whoever built the delegate owns it. {@link #sendAsync} is not supported yet: it must wait for
 * its turn without blocking a thread, which needs {@code DestinationLimiter.acquireAsync()}.
 */
public final class PacedHttpClient extends HttpClient {

  private static final Logger log = LoggerFactory.getLogger(PacedHttpClient.class);
  /** How long the body of a hop nobody reads may drain when there is no answer timeout. */
  private static final Duration DEFAULT_DISCARD_LIMIT = Duration.ofSeconds(60);

  private final HttpClient delegate;
  private final LimiterLookup limiters;
  private final HttpClient.Redirect followRedirects;
  private final Redirects redirects;
  private final Optional<Duration> answerTimeout;
  private final Optional<Consumer<SentRequest>> listener;
  private final AtomicBoolean listenerFailed = new AtomicBoolean();

  private PacedHttpClient(Builder b) {
    this.delegate = b.delegate;
    this.limiters = b.limiters;
    this.followRedirects = b.followRedirects;
    this.redirects = b.redirects.orElse(Redirects.like(b.followRedirects, b.maxRedirects));
    this.answerTimeout = b.answerTimeout;
    this.listener = b.listener;
  }

  /**
   * A client sending through {@code delegate}, which must not follow redirects itself, paced by the
   * limiter {@code limiters} names for each request.
   */
  public static Builder builder(HttpClient delegate, LimiterLookup limiters) {
    return new Builder(delegate, limiters);
  }

  /** Every request through {@code delegate} paced by {@code limiter}; redirects not followed. */
  public static PacedHttpClient of(HttpClient delegate, DestinationLimiter limiter) {
    return builder(delegate, LimiterLookup.only(limiter)).build();
  }

  /** The client requests are sent through. */
  public HttpClient delegate() {
    return delegate;
  }

  @Override
  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    Objects.requireNonNull(handler, "handler");
    return exchange(request, uri -> handler, 1).response();
  }

  /**
   * The final answer of one {@link #exchange}: the response, what its status meant for the pacing
   * of its destination, and why a redirect it carries was not followed, if it is one.
   */
  record Exchanged<T>(HttpResponse<T> response, Answer answer, Optional<String> notFollowed) {}

  /**
   * Sends {@code request} and follows its redirects, each hop with a turn of its own; the first
   * hop takes {@code firstIntervals} turns ({@link DestinationLimiter#acquire(int)}). The final
   * answer's body goes to the handler {@code handlers} gives for its URI.
   */
  <T> Exchanged<T> exchange(HttpRequest request,
      Function<URI, HttpResponse.BodyHandler<T>> handlers, int firstIntervals)
      throws IOException, InterruptedException {
    Objects.requireNonNull(request, "request");
    HttpRequest current = request;
    for (int hop = 0; ; hop++) {
      Optional<DestinationLimiter> limiter = limiters.limiterFor(current.uri());
      Optional<Slot> slot = Optional.empty();
      if (limiter.isPresent()) {
        slot = Optional.of(limiter.get().acquire(hop == 0 ? firstIntervals : 1));
      }
      Hop<T> answered = new Hop<>(request.uri(), current.uri(), hop, limiter, slot, handlers);
      TimeSource time = limiter.map(DestinationLimiter::time).orElse(TimeSource.SYSTEM);
      long sentNanos = time.nanoTime();
      long sentMicros = time.epochMicros();
      HttpResponse<T> response;
      try {
        response = await(delegate.sendAsync(current, answered), current.uri());
      } catch (IOException | InterruptedException | RuntimeException | Error e) {
        slot.ifPresent(Slot::close);
        throw e;
      } finally {
        if (slot.isPresent()) {
          report(new SentRequest(current.uri(), hop, slot.get().turnNanos(), sentNanos,
              sentMicros, answered.status()));
        }
      }
      if (answered.discarded) {
        // Nobody reads this body: it drains in the background, holding no permit.
        slot.ifPresent(Slot::close);
      }
      if (answered.next instanceof Redirects.Next.Follow follow) {
        current = Redirects.nextRequest(current, response.statusCode(), follow.uri());
        continue;
      }
      Optional<String> refused = answered.next instanceof Redirects.Next.Refuse refuse
          ? Optional.of(refuse.reason()) : Optional.empty();
      return new Exchanged<>(response, answered.answer, refused);
    }
  }

  /**
   * One hop's body handler: classifies the answer as soon as its headers arrive, decides whether
   * it is a redirect to follow (then its body is dropped), and otherwise hands the body to the
   * caller's handler, closing the slot when it ends (or, for a body nobody reads, when the
   * answer is returned).
   */
  private final class Hop<T> implements HttpResponse.BodyHandler<T> {
    private final URI requested;
    private final URI uri;
    private final int followed;
    private final Optional<DestinationLimiter> limiter;
    private final Optional<Slot> slot;
    private final Function<URI, HttpResponse.BodyHandler<T>> handlers;
    private volatile int status = SentRequest.NO_STATUS;
    private volatile boolean discarded;
    private volatile Answer answer = Answer.CLEAN;
    private volatile Redirects.Next next;

    Hop(URI requested, URI uri, int followed, Optional<DestinationLimiter> limiter,
        Optional<Slot> slot, Function<URI, HttpResponse.BodyHandler<T>> handlers) {
      this.requested = requested;
      this.uri = uri;
      this.followed = followed;
      this.limiter = limiter;
      this.slot = slot;
      this.handlers = handlers;
    }

    int status() {
      return status;
    }

    @Override
    public HttpResponse.BodySubscriber<T> apply(HttpResponse.ResponseInfo info) {
      status = info.statusCode();
      if (limiter.isPresent()) {
        answer = limiter.get().noteAnswer(info.statusCode(),
            info.headers().firstValue("Retry-After").orElse(null), uri);
      }
      if (answer == Answer.CLEAN && redirects.followsAny()
          && Redirects.isRedirect(info.statusCode())) {
        next = redirects.next(requested, uri, info.statusCode(),
            info.headers().firstValue("Location"), followed);
        if (next instanceof Redirects.Next.Follow) {
          discarded = true;
          return new DiscardedBody<>(null, discardLimit());
        }
      }
      HttpResponse.BodySubscriber<T> body = handlers.apply(uri).apply(info);
      if (body instanceof DiscardedBody) {
        discarded = true;
        return body;
      }
      return slot.isPresent() ? new SlotReleasingBody<>(body, slot.get()) : body;
    }
  }

  /** The answer, within the answer timeout if there is one; cancelled if it fails to come. */
  private <T> HttpResponse<T> await(CompletableFuture<HttpResponse<T>> future, URI uri)
      throws IOException, InterruptedException {
    try {
      if (answerTimeout.isPresent()) {
        return future.get(answerTimeout.get().toNanos(), TimeUnit.NANOSECONDS);
      }
      return future.get();
    } catch (TimeoutException e) {
      // Cancelling the exchange closes its connection (Java 16+), and with it a trickling body.
      future.cancel(true);
      HttpTimeoutException late = new HttpTimeoutException("no complete response from " + uri
          + " within " + describe(answerTimeout.get()));
      late.initCause(e);
      throw late;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IOException io) {
        throw io;
      }
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      if (cause instanceof Error error) {
        throw error;
      }
      throw new IOException(cause);
    } catch (InterruptedException e) {
      future.cancel(true);
      throw e;
    }
  }

  private void report(SentRequest sent) {
    if (listener.isEmpty()) {
      return;
    }
    try {
      listener.get().accept(sent);
    } catch (RuntimeException e) {
      if (listenerFailed.compareAndSet(false, true)) {
        log.warn("The request listener threw; requests go on, and later failures of the listener"
            + " are not logged", e);
      }
    }
  }

  /** How long a body nobody reads may drain: the answer timeout, or 60 s without one. */
  Duration discardLimit() {
    return answerTimeout.orElse(DEFAULT_DISCARD_LIMIT);
  }

  static String describe(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request,
      HttpResponse.BodyHandler<T> handler) {
    return sendAsync(request, handler, null);
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request,
      HttpResponse.BodyHandler<T> handler, HttpResponse.PushPromiseHandler<T> pushPromises) {
    throw new UnsupportedOperationException("PacedHttpClient.sendAsync is not supported yet (it"
        + " must wait for its turn without blocking a thread); use send");
  }

  /** This client's redirect policy (the delegate's is always {@code NEVER}). */
  @Override
  public HttpClient.Redirect followRedirects() {
    return followRedirects;
  }

  /** Refused: a WebSocket opened past the limiter would not be paced; open it on the delegate. */
  @Override
  public WebSocket.Builder newWebSocketBuilder() {
    throw new UnsupportedOperationException("a WebSocket opened through PacedHttpClient would"
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
    private Optional<Redirects> redirects = Optional.empty();
    private Optional<Duration> answerTimeout = Optional.empty();
    private Optional<Consumer<SentRequest>> listener = Optional.empty();

    private Builder(HttpClient delegate, LimiterLookup limiters) {
      this.delegate = Objects.requireNonNull(delegate, "delegate");
      this.limiters = Objects.requireNonNull(limiters, "limiters");
      if (delegate.followRedirects() != HttpClient.Redirect.NEVER) {
        throw new IllegalArgumentException("the delegate client must not follow redirects (it"
            + " follows " + delegate.followRedirects() + "): a redirect it followed would take"
            + " no turn. Build it with Redirect.NEVER and set followRedirects on"
            + " PacedHttpClient.Builder, which follows each hop with a turn of its own");
      }
    }

    /**
     * Which redirects this client follows, each hop with its own turn: as the JDK's client means
     * {@code policy}. Default {@code NEVER}.
     */
    public Builder followRedirects(HttpClient.Redirect policy) {
      this.followRedirects = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** The most redirects followed per request (default 5); the next one is returned as is. */
    public Builder maxRedirects(int maxRedirects) {
      if (maxRedirects < 0) {
        throw new IllegalArgumentException("maxRedirects must be >= 0, got " + maxRedirects);
      }
      this.maxRedirects = maxRedirects;
      return this;
    }

    /** {@link DestinationFetcher}'s policy: hops within the requested URL's origin only. */
    Builder redirects(Redirects redirects) {
      this.redirects = Optional.of(redirects);
      return this;
    }

    /**
     * Each hop's whole answer (a body read into memory or a file included) within {@code timeout},
     * or the exchange is cancelled and {@code send} throws {@link HttpTimeoutException}. Default:
     * none.
     */
    public Builder answerTimeout(Duration timeout) {
      if (timeout == null || timeout.isZero() || timeout.isNegative()) {
        throw new IllegalArgumentException("answerTimeout must be > 0, got " + timeout);
      }
      this.answerTimeout = Optional.of(timeout);
      return this;
    }

    /**
     * Called with every paced request sent, redirect hops included, on the sending thread, once
     * its status is known or it failed; the request's slot may still be held, so keep it quick. If
     * it throws, requests go on (logged once at WARN).
     */
    public Builder onRequest(Consumer<SentRequest> listener) {
      this.listener = Optional.of(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    public PacedHttpClient build() {
      return new PacedHttpClient(this);
    }
  }
}
