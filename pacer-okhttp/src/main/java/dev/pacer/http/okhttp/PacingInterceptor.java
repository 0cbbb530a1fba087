package dev.pacer.http.okhttp;

import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LockedOutException;
import dev.pacer.Slot;
import dev.pacer.http.AddressPolicy;
import dev.pacer.http.Origins;
import dev.pacer.http.WarmUp;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.Proxy;
import java.net.URI;
import java.util.Objects;
import java.util.Optional;
import okhttp3.Connection;
import okhttp3.Interceptor;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import okhttp3.ResponseBody;
import okio.Buffer;
import okio.BufferedSource;
import okio.ForwardingSource;
import okio.Okio;

/**
 * Paces an OkHttp 5 client: a <em>network</em> interceptor that takes a turn from the request's
 * {@link DestinationLimiter} before every request OkHttp puts on the wire.
 *
 * <pre>{@code
 * OkHttpClient client = new OkHttpClient.Builder()
 *     .addNetworkInterceptor(new PacingInterceptor(LimiterLookup.byHost(registry, destinations)))
 *     .build();
 * }</pre>
 *
 * <h2>Why a network interceptor</h2>
 *
 * OkHttp follows redirects, authentication challenges and retries in its {@code
 * RetryAndFollowUpInterceptor}, which sits after the application interceptors and before the
 * network ones: an application interceptor sees a chain of three redirects as one call, three
 * requests to the destination in one turn. A network interceptor runs once per request sent, so
 * every hop, every retry and every follow-up takes its own turn, and a response served from
 * OkHttp's cache, which sends nothing, takes none. Added as an application interceptor it refuses
 * to run (it can tell: an application interceptor has no connection), naming the right method.
 *
 * <p>The price of that position: OkHttp has already picked (or opened) the connection when the
 * interceptor waits for its turn, so a waiting request holds that connection. A new connection's
 * handshakes are therefore done before the turn, and the request leaves at it; a pooled connection
 * that the server closes during a long wait fails the request, which OkHttp retries on a new
 * connection (with {@code retryOnConnectionFailure}, the default) after another turn. Keep the
 * dispatcher's {@code maxRequestsPerHost} near the destination's {@code maxConcurrency}, so that
 * few connections wait for permits.
 *
 * <h2>Each answer</h2>
 *
 * Its status and {@code Retry-After} go to {@link DestinationLimiter#noteAnswer}, the
 * classification every Pacer client shares, and the response is returned as it is: a 429 reaches
 * the caller as a 429, the limiter having backed off (and with a {@code Retry-After} paused the
 * fleet); after a 403 the limiter is locked out, and every later request to the destination throws
 * {@link LockedOutException} from this interceptor before it is sent.
 *
 * <h2>The permit</h2>
 *
 * The slot (the destination's concurrency permit) is released when the response body is read to its
 * end or closed, which OkHttp requires of every response, and which its redirect handling does
 * before it sends the next hop; a request that fails releases it at once, and so does an answer
 * whose classification throws, closing the response before the call fails. A body never closed
 * holds its permit, as it holds its connection. Interrupted while waiting for its turn, the call
 * fails with an {@link InterruptedIOException}.
 *
 * <p>A request the {@link LimiterLookup} does not pace is sent without a turn, guarded as below.
 *
 * <h2>Redirects and the call's other requests</h2>
 *
 * Every request a call puts on the wire after its first (a redirect hop, a retry, a follow-up),
 * paced or not, is judged against the call's first before it is sent:
 *
 * <ul>
 *   <li>from a public host, a request whose connection goes to an internal address is refused
 *       ({@link AddressPolicy}). The call's host is classified by the address its first request's
 *       connection went to, and each later request by its own connection's address: the resolution
 *       OkHttp connected with, so a name that changes its answer between the two cannot pass.
 *       Through a proxy, which resolves names itself, the names are resolved here instead. The
 *       connection is already open when the interceptor runs (nothing has been written on it);
 *       OkHttp's {@code Dns} could refuse before connecting, but is asked with no call, so it
 *       cannot tell a hop from a first request;
 *   <li>to another origin than the call's, the caller's own {@code Authorization}, {@code
 *       Proxy-Authorization} and {@code Cookie} headers are dropped (a value OkHttp set for that
 *       origin, from its cookie jar or authenticator, is kept), and a request with a body is
 *       refused: a 307 or 308 would repeat it there ({@link Origins}).
 * </ul>
 *
 * A refused request fails the call with a {@link ProtocolException}, which OkHttp does not retry,
 * naming the host and the reason.
 *
 * <h2>A cold JVM</h2>
 *
 * Call {@link #warmUp} once, after building the client and before its first request: in a cold JVM
 * the first requests load the client's classes after their turns have begun, and requests granted
 * turns meanwhile reach the destination together (see {@link WarmUp}).
 */
public final class PacingInterceptor implements Interceptor {

  /** The tag of the warm-up's request, which this interceptor lets through without a turn. */
  private enum WarmUpTag {
    WARM_UP
  }

  /** A call's first request: the URL the call asked for, and its host as classified then. */
  private record FirstRequest(URI uri, AddressPolicy.RequestedHost host) {}

  private final LimiterLookup limiters;
  private final AddressPolicy addresses;

  /**
   * Paces each request by the limiter {@code limiters} names for its URL.
   *
   * @param limiters which limiter paces a request, asked for every hop
   */
  public PacingInterceptor(LimiterLookup limiters) {
    this(limiters, AddressPolicy.system());
  }

  PacingInterceptor(LimiterLookup limiters, AddressPolicy addresses) {
    this.limiters = Objects.requireNonNull(limiters, "limiters");
    this.addresses = Objects.requireNonNull(addresses, "addresses");
  }

  /**
   * Paces every request by {@code limiter}.
   *
   * @param limiter the one limiter
   * @return the interceptor, to add with {@code addNetworkInterceptor}
   */
  public static PacingInterceptor of(DestinationLimiter limiter) {
    return new PacingInterceptor(LimiterLookup.only(limiter));
  }

  /**
   * Pays a cold JVM's first-request costs before the first turn, sending nothing to any destination
   * ({@link WarmUp}): one GET through {@code client} to a throwaway server on 127.0.0.1, which this
   * interceptor lets through without a turn, then, for each https URL of {@code destinations}, the
   * TLS stack, and the resolution of each host name. Call it once, before the first request;
   * failures are logged and ignored.
   *
   * @param client the client this interceptor was added to
   * @param destinations URLs of the destinations the client will send to, for their scheme and host
   *     (none is needed for the client's own warm-up)
   * @throws InterruptedException if interrupted during the warm-up
   */
  public static void warmUp(OkHttpClient client, URI... destinations) throws InterruptedException {
    Objects.requireNonNull(client, "client");
    WarmUp.run(
        loopback -> {
          Request get =
              new Request.Builder()
                  .url(loopback.toURL())
                  .tag(WarmUpTag.class, WarmUpTag.WARM_UP)
                  .build();
          try (Response response = client.newCall(get).execute()) {
            response.body().string();
          }
        },
        destinations);
  }

  @Override
  public Response intercept(Interceptor.Chain chain) throws IOException {
    if (chain.connection() == null) {
      throw new IllegalStateException(
          "PacingInterceptor must be added with OkHttpClient.Builder.addNetworkInterceptor: as an"
              + " application interceptor it would see a chain of redirects as one request, and its"
              + " hops would take no turn");
    }
    if (chain.request().tag(WarmUpTag.class) != null) {
      return chain.proceed(chain.request());
    }
    Request request = guarded(chain);
    Optional<DestinationLimiter> limiter = limiters.limiterFor(request.url().uri());
    if (limiter.isEmpty()) {
      return chain.proceed(request);
    }
    Slot slot;
    try {
      slot = limiter.get().acquire();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      InterruptedIOException interrupted =
          new InterruptedIOException(
              "interrupted while waiting for a turn to send " + request.url());
      interrupted.initCause(e);
      throw interrupted;
    }
    Response response;
    try {
      response = chain.proceed(request);
    } catch (IOException | RuntimeException | Error e) {
      slot.close();
      throw e;
    }
    try {
      limiter.get().noteAnswer(response.code(), response.header("Retry-After"), request.url());
      return response.newBuilder().body(new SlotReleasingBody(response.body(), slot)).build();
    } catch (RuntimeException | Error e) {
      // No one will close this response: OkHttp would detach its exchange and close the
      // connection; closing it here lets OkHttp reuse a connection whose body ends at once.
      try {
        response.close();
      } finally {
        slot.close();
      }
      throw e;
    }
  }

  /**
   * The request to send, judged against the call's first (see the class comment): the same, or
   * without the caller's credentials on another origin.
   *
   * @throws ProtocolException if it must not be sent
   */
  private Request guarded(Interceptor.Chain chain) throws IOException {
    Request request = chain.request();
    Request asked = chain.call().request();
    Optional<InetAddress> connected = directAddress(chain.connection());
    boolean[] first = {false};
    FirstRequest firstRequest =
        chain
            .call()
            .tag(
                FirstRequest.class,
                () -> {
                  first[0] = true;
                  boolean ownRequest = request.url().equals(asked.url());
                  String host = asked.url().host();
                  return new FirstRequest(
                      asked.url().uri(),
                      ownRequest && connected.isPresent()
                          ? addresses.requested(host, connected.get())
                          : addresses.requested(host));
                });
    if (first[0] && request.url().equals(asked.url())) {
      return request;
    }
    String host = request.url().host();
    AddressPolicy.Verdict verdict =
        connected.isPresent()
            ? firstRequest.host().hop(host, connected.get())
            : firstRequest.host().hop(host);
    if (verdict instanceof AddressPolicy.Verdict.Refused refused) {
      throw new ProtocolException(request.url() + " is not sent: " + refused.reason());
    }
    if (Origins.same(firstRequest.uri(), request.url().uri())) {
      return request;
    }
    if (request.body() != null && request.body().contentLength() != 0) {
      throw new ProtocolException(
          request.url()
              + " is not sent: it would repeat the request's"
              + " body at another origin than "
              + firstRequest.uri());
    }
    Request.Builder without = request.newBuilder();
    for (String name : Origins.CREDENTIAL_HEADERS) {
      if (!request.headers(name).isEmpty() && request.headers(name).equals(asked.headers(name))) {
        without.removeHeader(name);
      }
    }
    return without.build();
  }

  /** The address {@code connection} goes to, if it goes there directly, not through a proxy. */
  private static Optional<InetAddress> directAddress(Connection connection) {
    InetSocketAddress socket = connection.route().socketAddress();
    if (connection.route().proxy().type() != Proxy.Type.DIRECT || socket.getAddress() == null) {
      return Optional.empty();
    }
    return Optional.of(socket.getAddress());
  }

  /** A response body that closes its request's slot when it is exhausted or closed. */
  private static final class SlotReleasingBody extends ResponseBody {
    private final ResponseBody body;
    private final Slot slot;
    private final BufferedSource source;

    SlotReleasingBody(ResponseBody body, Slot slot) {
      this.body = body;
      this.slot = slot;
      this.source =
          Okio.buffer(
              new ForwardingSource(body.source()) {
                @Override
                public long read(Buffer sink, long byteCount) throws IOException {
                  long read;
                  try {
                    read = super.read(sink, byteCount);
                  } catch (IOException | RuntimeException e) {
                    slot.close();
                    throw e;
                  }
                  if (read == -1) {
                    slot.close();
                  }
                  return read;
                }

                @Override
                public void close() throws IOException {
                  slot.close();
                  super.close();
                }
              });
    }

    @Override
    public MediaType contentType() {
      return body.contentType();
    }

    @Override
    public long contentLength() {
      return body.contentLength();
    }

    @Override
    public BufferedSource source() {
      return source;
    }

    @Override
    public void close() {
      slot.close();
      body.close();
    }
  }
}
