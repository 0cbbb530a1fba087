package dev.pacer.jdkhttp.fetch;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LockedOutException;
import dev.pacer.Slot;
import dev.pacer.ThrottledException;
import dev.pacer.TimeSource;
import dev.pacer.http.AddressPolicy;
import dev.pacer.http.WarmUp;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.jdkhttp.SentRequest;
import dev.pacer.jdkhttp.internal.DiscardedBody;
import dev.pacer.jdkhttp.internal.Exchanged;
import dev.pacer.jdkhttp.internal.Exchanges;
import dev.pacer.jdkhttp.internal.Redirects;
import dev.pacer.shared.GuardedListener;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fetches URLs of one destination through its {@link DestinationLimiter}, with one reused {@link
 * HttpClient}, and feeds every answer back into the limiter:
 *
 * <ul>
 *   <li>a {@linkplain Destination#lockoutStatusCodes() lockout status} (403): the limiter locks out
 *       and {@link LockedOutException} is thrown, a hard stop;
 *   <li>a {@linkplain Destination#backoffStatusCodes() backoff status} (429, 503): the limiter
 *       backs off and {@link ThrottledException} is thrown: defer the item, the run goes on slower.
 *       With a {@code Retry-After} (delta-seconds or an HTTP-date) the whole fleet also pauses for
 *       that long ({@link DestinationLimiter#backoff(Duration)});
 *   <li>anything else counts as a clean response ({@link DestinationLimiter#noteCleanResponse()});
 *       a 2xx is returned, a redirect is followed (below), any other status is a {@link
 *       FetchFailedException}.
 * </ul>
 *
 * <h2>One fetch path: the {@link PacedHttpClient}</h2>
 *
 * Requests go through {@link PacedHttpClient}'s own exchange around the fetcher's {@link
 * HttpClient}: the same hops any caller of the decorator gets, so a turn, its classification and
 * its slot mean the same thing in the CLI and in an application. The fetcher adds only what a fetch
 * of one URL needs on top: its redirect policy, its deadline, its body handling, and exceptions for
 * the answers that are not a 2xx.
 *
 * <h2>Every request takes a turn, redirects too</h2>
 *
 * The decorator follows 301, 302, 303, 307 and 308 itself, each hop with its own {@link
 * DestinationLimiter#acquire()}, closing the previous hop's slot first (so a chain holds one
 * concurrency permit, not one per hop); the client never follows redirects itself, since a redirect
 * it followed would take no turn. The fetcher's policy (same origin only) follows at most {@code
 * maxRedirects} (default 5), only within the requested URL's scheme, host and port, and never into
 * an internal network from a public host ({@link AddressPolicy}): another host has its own ceiling,
 * which this limiter cannot hold. Since only the destination's own hops are followed, every answer
 * classified above is the destination's; a 403 on the third hop locks out like one on the first. A
 * redirect not followed fails the fetch, saying why.
 *
 * <h2>A whole answer within the deadline</h2>
 *
 * {@code requestTimeout} (default 60 s, the decorator's {@linkplain
 * PacedHttpClient.Builder#answerTimeout answer timeout}) bounds each request, body included, not
 * only its headers: a body trickling one byte every few seconds would otherwise hold a fetching
 * thread, and with it a concurrency permit, for as long as the server likes. Past it the exchange
 * is cancelled (which, since Java 16, closes its connection) and the item fails with "no complete
 * response ... within 60 s"; the fetching thread returns, the server sees its connection closed,
 * and the next fetch can go.
 *
 * <h2>Bodies stream</h2>
 *
 * A 2xx body goes, as it arrives, to memory ({@link #fetch(URI)}) or to a file ({@link
 * #fetchTo(URI, Path)}, forced to disk before it returns, unless {@link #fetchToUnforced}), and
 * fails as soon as it passes {@code maxBodyBytes} (default 32 MiB), deleting a partial file. Other
 * answers are complete at their headers: the fetch returns then, and their bodies are read and
 * dropped in the background so that the connection can be reused, holding the request's permit
 * until they end ({@link DiscardedBody}: past 64 KiB or 1 s the connection is closed instead).
 * Network errors, deadlines and oversized bodies are ordinary failures ({@link
 * FetchFailedException}), never throttles.
 *
 * <h2>Lateness</h2>
 *
 * A request is late by the time between its turn's start ({@link Slot#turnNanos()}) and the moment
 * it is handed to the client: the wake-up after the sleep and this class's own work. Every request
 * sent, every hop, is reported as a {@link SentRequest} to the {@link Builder#onRequest listener},
 * on the fetching thread, once its status is known or it failed. Times come from the limiter's
 * {@link TimeSource}.
 *
 * <h2>Warm-up</h2>
 *
 * In a cold JVM the first request costs far more than later ones: {@link #warmUp(URI)} pays that
 * before the first turn, without sending anything to the destination. See its comment for what it
 * does and what it saves. What it cannot do is open the first connection to the destination: the
 * first request therefore takes two turns ({@link DestinationLimiter#acquire(int)}), so that if it
 * leaves late it does not leave close behind the fleet's next request: a first request can still
 * arrive more than an interval after its turn at 20/s (docs/cli.md gives the figures), and the
 * margin costs one interval per process. It is taken only where the interval is under {@link
 * #FIRST_REQUEST_MARGIN_BELOW}: a request late by less than one interval cannot bring more than the
 * ceiling + 1 requests into any second, since it narrows the gap after it only by as much as it
 * widens the gap before it, and at 0.5/s the margin would cost 2 s of each process's first turn for
 * a lateness a hundred times shorter.
 *
 * <p>Every 50 requests the achieved rate is logged at INFO. Safe for concurrent use; the limiter
 * bounds how many requests are in flight.
 */
public final class DestinationFetcher {

  private static final Logger log = LoggerFactory.getLogger(DestinationFetcher.class);

  /** The default cap on a body, in bytes: 32 MiB. */
  public static final long DEFAULT_MAX_BODY_BYTES = 32L * 1024 * 1024;

  /** The default number of redirects followed per fetch. */
  public static final int DEFAULT_MAX_REDIRECTS = 5;

  /** The achieved rate is logged at INFO every this many requests. */
  public static final int RATE_LOG_EVERY = 50;

  /**
   * A first request takes two turns only when the destination's interval is shorter than this
   * (rates above 1/s): see the class comment.
   */
  public static final Duration FIRST_REQUEST_MARGIN_BELOW = Duration.ofSeconds(1);

  /** The largest body {@link #fetch(URI)} can hold in one array. */
  private static final long MAX_IN_MEMORY = Integer.MAX_VALUE - 8;

  private final DestinationLimiter limiter;
  private final Destination destination;
  private final Exchanges paced;

  /** The same client and body path, pacing nothing: for the warm-up, which takes no turn. */
  private final Exchanges unpaced;

  private final long maxBodyBytes;
  private final Map<String, String> headers;
  private final Optional<GuardedListener<Consumer<SentRequest>>> listener;
  private final AtomicLong requests = new AtomicLong();
  private final AtomicBoolean firstRequest = new AtomicBoolean(true);
  private final AtomicLong throttled = new AtomicLong();

  private DestinationFetcher(Builder b) {
    this.limiter = b.limiter;
    this.destination = b.limiter.destination();
    HttpClient client =
        b.client != null
            ? b.client
            : HttpClient.newBuilder()
                .connectTimeout(b.connectTimeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .version(HttpClient.Version.HTTP_1_1)
                .build();
    Optional<Duration> deadline = Optional.of(b.requestTimeout);
    this.paced =
        new Exchanges(
            client,
            LimiterLookup.only(limiter),
            Redirects.sameOrigin(b.maxRedirects, b.addresses),
            deadline,
            Optional.of(
                (uri, hop, turnNanos, sentNanos, sentEpochMicros, status) ->
                    sent(
                        new SentRequest(uri, hop, turnNanos, sentNanos, sentEpochMicros, status))));
    this.unpaced =
        new Exchanges(
            client,
            uri -> Optional.empty(),
            Redirects.like(HttpClient.Redirect.NEVER, 0, AddressPolicy.system()),
            deadline,
            Optional.empty());
    this.maxBodyBytes = b.maxBodyBytes;
    this.headers = Map.copyOf(b.headers);
    this.listener =
        Optional.ofNullable(b.listener)
            .map(
                l ->
                    new GuardedListener<>(
                        l,
                        DestinationFetcher.class.getName(),
                        () -> "Destination " + destination.name() + ": the request listener",
                        "the fetch goes on"));
  }

  /**
   * A fetcher pacing through {@code limiter}.
   *
   * @param limiter the destination's limiter
   * @return a builder
   */
  public static Builder builder(DestinationLimiter limiter) {
    return new Builder(limiter);
  }

  /**
   * The limiter this fetcher paces through.
   *
   * @return the limiter
   */
  public DestinationLimiter limiter() {
    return limiter;
  }

  /**
   * Requests sent so far, redirect hops included (each one took a turn from the limiter).
   *
   * @return the number of requests sent
   */
  public long requestCount() {
    return requests.get();
  }

  /**
   * Requests answered with a backoff status so far.
   *
   * @return the number of backoff answers
   */
  public long throttledCount() {
    return throttled.get();
  }

  /**
   * Takes a turn, sends a GET for {@code uri}, follows its redirects (a turn each), and classifies
   * each answer; the body of the final 2xx is kept in memory.
   *
   * @param uri the URI to fetch
   * @return the 2xx answer, its body {@linkplain FetchResponse.Content.InMemory in memory}
   * @throws LockedOutException on a lockout status, or if the destination was already locked out
   * @throws ThrottledException on a backoff status; the limiter has backed off
   * @throws FetchFailedException on any other failure, a refused redirect among them
   * @throws InterruptedException if interrupted while waiting for a turn or an answer
   */
  public FetchResponse fetch(URI uri)
      throws InterruptedException, ThrottledException, FetchFailedException {
    return fetch(uri, CappedBody.InMemory::new, Math.min(maxBodyBytes, MAX_IN_MEMORY));
  }

  /**
   * As {@link #fetch(URI)}, but streams the body of the final 2xx to {@code bodyFile}, created or
   * truncated when that body starts, and forced to the storage device before returning. The file is
   * untouched if no 2xx arrives, and deleted if its body fails (over the cap, deadline, network
   * error, interrupt).
   *
   * @param uri the URI to fetch
   * @param bodyFile where the body of the final 2xx goes
   * @return the 2xx answer, its body {@linkplain FetchResponse.Content.InFile in the file}
   * @throws LockedOutException on a lockout status, or if the destination was already locked out
   * @throws ThrottledException on a backoff status; the limiter has backed off
   * @throws FetchFailedException on any other failure, the body's included
   * @throws InterruptedException if interrupted while waiting for a turn or an answer
   */
  public FetchResponse fetchTo(URI uri, Path bodyFile)
      throws InterruptedException, ThrottledException, FetchFailedException {
    Objects.requireNonNull(bodyFile, "bodyFile");
    return fetch(uri, () -> new CappedBody.ToFile(bodyFile, true), maxBodyBytes);
  }

  /**
   * As {@link #fetchTo(URI, Path)}, but leaves the body file unforced: for a caller that makes many
   * bodies durable at one point (one file-system sync for a group of them), and so must not record
   * the item as safely stored until that point has passed.
   *
   * @param uri the URI to fetch
   * @param bodyFile where the body of the final 2xx goes
   * @return the 2xx answer, its body {@linkplain FetchResponse.Content.InFile in the file}, written
   *     but not forced
   * @throws LockedOutException on a lockout status, or if the destination was already locked out
   * @throws ThrottledException on a backoff status; the limiter has backed off
   * @throws FetchFailedException on any other failure, the body's included
   * @throws InterruptedException if interrupted while waiting for a turn or an answer
   */
  public FetchResponse fetchToUnforced(URI uri, Path bodyFile)
      throws InterruptedException, ThrottledException, FetchFailedException {
    Objects.requireNonNull(bodyFile, "bodyFile");
    return fetch(uri, () -> new CappedBody.ToFile(bodyFile, false), maxBodyBytes);
  }

  /**
   * {@link #warmUp(URI)} without the destination-specific parts (TLS, name resolution).
   *
   * @throws InterruptedException if interrupted during the warm-up
   */
  public void warmUp() throws InterruptedException {
    WarmUp.run(this::warmUpGet);
  }

  /**
   * Pays a cold JVM's first-request costs before the first turn, sending nothing to the destination
   * ({@link WarmUp}): one request through this fetcher's own client and body path (the send, the
   * deadline, the streaming subscriber) to a throwaway server on 127.0.0.1, then, for an https
   * {@code destinationUrl}, the TLS stack, then the resolution of its host name. Call it once,
   * before the first fetch (it takes no turn and counts no request). Failures are logged and
   * ignored: a cold first request is slower, not wrong.
   *
   * <p>Why: left to the first turn, this work delays the first requests of every fetching thread,
   * which were granted turns a few milliseconds apart, until all of them leave together. The first
   * fetch of a cold JVM loads the client's classes ({@code jdk.internal.net.http}, the selector's
   * {@code sun.nio.ch}, and the lambda and method-handle classes spun at their first call) and
   * starts the client's selector thread, all after the hand-over, where {@linkplain
   * SentRequest#lateness() lateness} does not see it; after {@code warmUp} the first fetch loads
   * almost nothing. The figures are in docs/reliability.md ("A cold HTTP client"), measured with
   * {@code WarmUpProbe} in the test sources. Building the client itself is not in a turn: it
   * happens in {@link Builder#build()}.
   *
   * @param destinationUrl a URL of the destination, for its scheme and host
   * @throws InterruptedException if interrupted during the warm-up
   */
  public void warmUp(URI destinationUrl) throws InterruptedException {
    WarmUp.run(this::warmUpGet, destinationUrl);
  }

  private void warmUpGet(URI loopback) throws InterruptedException, FetchFailedException {
    exchange(
        unpaced,
        loopback,
        1,
        new AtomicReference<>(),
        new AtomicReference<>(),
        CappedBody.InMemory::new,
        1024);
  }

  private FetchResponse fetch(URI requested, Supplier<CappedBody.Sink> sinks, long cap)
      throws InterruptedException, ThrottledException, FetchFailedException {
    // The first request opens the first connection to the destination, which no warm-up can do
    // without sending it something: at a short interval it takes two turns, so that if it leaves
    // late it does not leave close behind the next request of the fleet.
    boolean first =
        firstRequest.compareAndSet(true, false)
            && destination.interval().compareTo(FIRST_REQUEST_MARGIN_BELOW) < 0;
    AtomicReference<HttpResponse.ResponseInfo> info = new AtomicReference<>();
    AtomicReference<CappedBody> body = new AtomicReference<>();
    Exchanged<Long> answer = exchange(paced, requested, first ? 2 : 1, info, body, sinks, cap);
    HttpResponse<Long> response = answer.response();
    URI at = response.uri();
    switch (answer.answer()) {
      case LOCKED_OUT ->
          throw new LockedOutException(
              destination.name(), "HTTP " + response.statusCode() + " from " + at);
      case THROTTLED -> {
        throttled.incrementAndGet();
        throw new ThrottledException(destination.name(), response.statusCode(), at.toString());
      }
      case CLEAN -> {}
    }
    if (response.statusCode() / 100 == 2) {
      return new FetchResponse(
          at, response.statusCode(), response.body(), body.get().sink().content());
    }
    throw new FetchFailedException(
        answer.notFollowed().orElse("HTTP " + response.statusCode() + " from " + at),
        response.statusCode());
  }

  /**
   * Sends a GET for {@code uri} through {@code client}, which follows its redirects (a turn each),
   * and waits for the whole final answer, at most {@code requestTimeout} a hop. A 2xx body goes to
   * a {@link CappedBody}; any other answer's body is dropped in the background.
   */
  private Exchanged<Long> exchange(
      Exchanges client,
      URI uri,
      int firstIntervals,
      AtomicReference<HttpResponse.ResponseInfo> info,
      AtomicReference<CappedBody> body,
      Supplier<CappedBody.Sink> sinks,
      long cap)
      throws InterruptedException, FetchFailedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET();
    headers.forEach(request::header);
    Function<URI, HttpResponse.BodyHandler<Long>> handlers =
        hop ->
            response -> {
              info.set(response);
              if (response.statusCode() / 100 != 2) {
                return new DiscardedBody<>(0L, response);
              }
              CappedBody capped =
                  new CappedBody(
                      hop,
                      cap,
                      response.headers().firstValueAsLong("Content-Length").orElse(-1L),
                      sinks.get());
              body.set(capped);
              return capped;
            };
    try {
      return client.exchange(request.build(), handlers, firstIntervals);
    } catch (HttpTimeoutException e) {
      abandon(body);
      throw new FetchFailedException(e.getMessage(), e);
    } catch (IOException e) {
      abandon(body);
      Optional<CappedBody.BodyFailure> refused = bodyFailure(e);
      if (refused.isPresent()) {
        throw new FetchFailedException(refused.get().getMessage(), info.get().statusCode());
      }
      throw new FetchFailedException("network error for " + uri + ": " + describe(e), e);
    } catch (InterruptedException | RuntimeException e) {
      abandon(body);
      throw e;
    }
  }

  /**
   * The body's own failure behind {@code e}: the JDK client's {@code send} throws a copy of the
   * exchange's exception, made on the calling thread, with the original as its cause.
   */
  private static Optional<CappedBody.BodyFailure> bodyFailure(IOException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof CappedBody.BodyFailure failure) {
        return Optional.of(failure);
      }
    }
    return Optional.empty();
  }

  /** Discards any body read so far. */
  private static void abandon(AtomicReference<CappedBody> body) {
    CappedBody started = body.get();
    if (started != null) {
      started.abandon();
    }
  }

  /** Every request sent, every hop: counted, the rate logged, and the listener told. */
  private void sent(SentRequest sent) {
    long n = requests.incrementAndGet();
    if (n % RATE_LOG_EVERY == 0) {
      logRate(n);
    }
    report(sent);
  }

  private void report(SentRequest sent) {
    listener.ifPresent(guarded -> guarded.tell(l -> l.accept(sent)));
  }

  private void logRate(long n) {
    log.info(
        "Destination {}: {} requests from this process, which achieved {}/s over the last"
            + " 10 s (fleet-wide ceiling {}/s, backoff x{}{})",
        destination.name(),
        n,
        String.format("%.2f", limiter.currentRate()),
        destination.ratePerSecond(),
        limiter.backoffMultiplier(),
        limiter.isDegraded() ? ", DEGRADED: pacing locally" : "");
  }

  private static String describe(Throwable e) {
    String message = e.getMessage();
    return e.getClass().getSimpleName() + (message == null ? "" : " (" + message + ")");
  }

  /** Builder for {@link DestinationFetcher}. */
  public static final class Builder {
    private final DestinationLimiter limiter;
    private HttpClient client;
    private long maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private int maxRedirects = DEFAULT_MAX_REDIRECTS;
    private Duration connectTimeout = Duration.ofSeconds(10);
    private Duration requestTimeout = Duration.ofSeconds(60);
    private final Map<String, String> headers = new LinkedHashMap<>();
    private Consumer<SentRequest> listener;
    private AddressPolicy addresses = AddressPolicy.system();

    private Builder(DestinationLimiter limiter) {
      this.limiter = Objects.requireNonNull(limiter, "limiter");
    }

    /**
     * Use this client instead of building one. It should not be shared across destinations, and
     * must not follow redirects itself: a redirect it followed would take no turn.
     *
     * @param client the client, not following redirects
     * @return this builder
     * @throws IllegalArgumentException if the client follows redirects
     */
    public Builder httpClient(HttpClient client) {
      this.client = Objects.requireNonNull(client, "client");
      if (client.followRedirects() != HttpClient.Redirect.NEVER) {
        throw new IllegalArgumentException(
            "the client must not follow redirects (it follows "
                + client.followRedirects()
                + "): each redirect hop takes its own turn");
      }
      return this;
    }

    /**
     * The largest body accepted, in bytes; a larger one fails the fetch. Default {@link
     * #DEFAULT_MAX_BODY_BYTES}.
     *
     * @param maxBodyBytes at least 0
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is negative
     */
    public Builder maxBodyBytes(long maxBodyBytes) {
      if (maxBodyBytes < 0) {
        throw new IllegalArgumentException("maxBodyBytes must be >= 0, got " + maxBodyBytes);
      }
      this.maxBodyBytes = maxBodyBytes;
      return this;
    }

    /**
     * The most redirects followed per fetch (0: none); one more fails the item. Default 5.
     *
     * @param maxRedirects at least 0
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is negative
     */
    public Builder maxRedirects(int maxRedirects) {
      if (maxRedirects < 0) {
        throw new IllegalArgumentException("maxRedirects must be >= 0, got " + maxRedirects);
      }
      this.maxRedirects = maxRedirects;
      return this;
    }

    /**
     * The deadline for connecting, when this builder builds the client. Default 10 s.
     *
     * @param timeout above zero
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is not above zero
     */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = positive("connectTimeout", timeout);
      return this;
    }

    /**
     * The deadline for each request's whole answer, body included. Default 60 s.
     *
     * @param timeout above zero
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is not above zero
     */
    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = positive("requestTimeout", timeout);
      return this;
    }

    /**
     * A header sent with every request (for example a User-Agent).
     *
     * @param name the header's name
     * @param value its value
     * @return this builder
     */
    public Builder header(String name, String value) {
      headers.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * Called with every request sent, redirect hops included, on the fetching thread, once its
     * status is known or it failed. Keep it quick: the request's slot is still held. If it throws,
     * the fetch goes on (logged once at WARN).
     *
     * @param listener told of each request sent
     * @return this builder
     */
    public Builder onRequest(Consumer<SentRequest> listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    Builder addressPolicy(AddressPolicy addresses) {
      this.addresses = Objects.requireNonNull(addresses, "addresses");
      return this;
    }

    /**
     * Builds the fetcher, and its HTTP client unless one was given.
     *
     * @return the fetcher
     */
    public DestinationFetcher build() {
      return new DestinationFetcher(this);
    }

    private static Duration positive(String field, Duration value) {
      if (value == null || value.isZero() || value.isNegative()) {
        throw new IllegalArgumentException(field + " must be > 0, got " + value);
      }
      return value;
    }
  }
}
