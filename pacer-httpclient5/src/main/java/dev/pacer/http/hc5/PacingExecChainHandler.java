package dev.pacer.http.hc5;

import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LockedOutException;
import dev.pacer.Slot;
import dev.pacer.http.AddressPolicy;
import dev.pacer.http.Origins;
import dev.pacer.http.WarmUp;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.apache.hc.client5.http.HttpRoute;
import org.apache.hc.client5.http.RedirectException;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.classic.ExecChainHandler;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.ChainElement;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.protocol.HttpClientContext;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpHost;
import org.apache.hc.core5.http.ProtocolException;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.HttpEntityWrapper;

/**
 * Paces an Apache HttpClient 5 (classic) client: an element of its execution chain that takes a
 * turn from the request's {@link DestinationLimiter} before every request the client sends.
 *
 * <pre>{@code
 * CloseableHttpClient client =
 *     new PacingExecChainHandler(LimiterLookup.byHost(registry, destinations))
 *         .addTo(HttpClients.custom())
 *         .build();
 * }</pre>
 *
 * <h2>Where it sits in the chain, and why</h2>
 *
 * The classic client runs each request through {@code REDIRECT}, {@code COMPRESS}, {@code
 * BACK_OFF}, {@code RETRY}, {@code PROTOCOL}, {@code CONNECT} and {@code MAIN_TRANSPORT}, in that
 * order. {@link #addTo} puts this handler just before {@code PROTOCOL}, so it is:
 *
 * <ul>
 *   <li>after {@code REDIRECT}, which calls the rest of the chain once per hop: every hop takes its
 *       own turn (a handler before it would see a chain of redirects as one request);
 *   <li>after {@code RETRY}: a retried request is another request to the destination, and takes
 *       another turn;
 *   <li>before {@code CONNECT}, which leases the connection: a request waiting for its turn holds
 *       no connection from the pool.
 * </ul>
 *
 * <h2>Each answer</h2>
 *
 * Its status and {@code Retry-After} go to {@link DestinationLimiter#noteAnswer}, the
 * classification every Pacer client shares, and the response is returned as it is: a 429 reaches
 * the caller as a 429, the limiter having backed off (and with a {@code Retry-After} paused the
 * fleet); after a 403 the limiter is locked out, and every later request to the destination throws
 * {@link LockedOutException} from {@code execute} before it is sent. The client's default retry
 * strategy sends a 429 or 503 once more after its {@code Retry-After} (sleeping for it on the
 * calling thread); that retry passes through this handler and takes a turn of its own, after the
 * fleet's pause. A caller that defers throttled work itself can turn it off ({@code
 * disableAutomaticRetries}, or a retry strategy of its own).
 *
 * <h2>The permit</h2>
 *
 * The slot (the destination's concurrency permit) is released when the response's entity is read to
 * its end or closed ({@code EntityUtils.consume}, a response handler's end, or closing the
 * response), which is also when the client releases the connection; the redirect handling does so
 * before it sends the next hop. An answer without an entity releases it at once, and so does a
 * request that fails, and an answer whose classification throws, after closing its connection (a
 * body read to its end would take as long as the destination likes). Interrupted while waiting for
 * its turn, the request fails with an {@link InterruptedIOException}.
 *
 * <p>A request the {@link LimiterLookup} does not pace is sent without a turn, guarded as below.
 *
 * <h2>Redirects and the exchange's other requests</h2>
 *
 * Every request an {@code execute} sends after its first (a redirect hop, a retry), paced or not,
 * is judged against the first before it takes a turn:
 *
 * <ul>
 *   <li>from a public host, a request whose host resolves to any internal address, or does not
 *       resolve, is refused ({@link AddressPolicy}: the exchange's host is classified once, when
 *       its first request passes this handler). The handler resolves each later request's host
 *       itself and pins the request's route to the first address it checked, so the connection goes
 *       where the check looked, without a lookup of its own; a pooled connection is reused only if
 *       it goes to that address. Through a proxy, which resolves names itself, the route is left as
 *       it is. (The connection manager's {@code DnsResolver} could do the same check, but it is
 *       asked with no context, so it cannot tell a hop from a first request, and it is the
 *       application's to set.)
 *   <li>to another origin than the first request's, the {@code Authorization}, {@code
 *       Proxy-Authorization} and {@code Cookie} headers the request carries are dropped (the
 *       client's own cookie store and authentication add theirs for that origin after this
 *       handler), and a request with an entity is refused: a 307 or 308 would repeat it there
 *       ({@link Origins}).
 * </ul>
 *
 * A refused request fails the {@code execute} with a {@link RedirectException} (wrapped, as every
 * protocol failure, in a {@code ClientProtocolException}), which is not retried, naming the host
 * and the reason.
 *
 * <h2>A cold JVM</h2>
 *
 * Call {@link #warmUp} once, after building the client and before its first request: in a cold JVM
 * the first requests load the client's classes after their turns have begun, and requests granted
 * turns meanwhile reach the destination together (see {@link WarmUp}).
 */
public final class PacingExecChainHandler implements ExecChainHandler {

  /** The name of this handler in the client's execution chain. */
  public static final String NAME = "pacer";

  /**
   * The context attribute that marks the warm-up's request, which this handler lets through without
   * a turn; its value must be {@link #WARM_UP}, which no one else holds.
   */
  private static final String WARM_UP_ATTRIBUTE = "dev.pacer.warm-up";

  private static final Object WARM_UP = new Object();

  /** The context attribute that keeps the exchange's {@link FirstRequest}. */
  private static final String FIRST_REQUEST_ATTRIBUTE = "dev.pacer.first-request";

  /**
   * An exchange's first request: its URI and its host as classified then. A context may serve
   * several exchanges, one after the other; the exchange id tells whose it is.
   */
  private record FirstRequest(String exchangeId, URI uri, AddressPolicy.RequestedHost host) {}

  private final LimiterLookup limiters;
  private final AddressPolicy addresses;

  /**
   * Paces each request by the limiter {@code limiters} names for its URI.
   *
   * @param limiters which limiter paces a request, asked for every hop
   */
  public PacingExecChainHandler(LimiterLookup limiters) {
    this(limiters, AddressPolicy.system());
  }

  PacingExecChainHandler(LimiterLookup limiters, AddressPolicy addresses) {
    this.limiters = Objects.requireNonNull(limiters, "limiters");
    this.addresses = Objects.requireNonNull(addresses, "addresses");
  }

  /**
   * Paces every request by {@code limiter}.
   *
   * @param limiter the one limiter
   * @return the handler, to {@link #addTo} a client builder
   */
  public static PacingExecChainHandler of(DestinationLimiter limiter) {
    return new PacingExecChainHandler(LimiterLookup.only(limiter));
  }

  /**
   * Adds this handler to {@code builder}'s chain just before {@code PROTOCOL} (see above).
   *
   * @param builder the client's builder
   * @return the same builder
   */
  public HttpClientBuilder addTo(HttpClientBuilder builder) {
    return builder.addExecInterceptorBefore(ChainElement.PROTOCOL.name(), NAME, this);
  }

  /**
   * Pays a cold JVM's first-request costs before the first turn, sending nothing to any destination
   * ({@link WarmUp}): one GET through {@code client} to a throwaway server on 127.0.0.1, which this
   * handler lets through without a turn, then, for each https URL of {@code destinations}, the TLS
   * stack, and the resolution of each host name. Call it once, before the first request; failures
   * are logged and ignored.
   *
   * @param client the client this handler was added to
   * @param destinations URLs of the destinations the client will send to, for their scheme and host
   *     (none is needed for the client's own warm-up)
   * @throws InterruptedException if interrupted during the warm-up
   */
  public static void warmUp(CloseableHttpClient client, URI... destinations)
      throws InterruptedException {
    Objects.requireNonNull(client, "client");
    WarmUp.run(
        loopback -> {
          HttpClientContext context = HttpClientContext.create();
          context.setAttribute(WARM_UP_ATTRIBUTE, WARM_UP);
          client.execute(
              new HttpGet(loopback),
              context,
              response -> {
                EntityUtils.consume(response.getEntity());
                return null;
              });
        },
        destinations);
  }

  @Override
  public ClassicHttpResponse execute(
      ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain)
      throws IOException, HttpException {
    URI uri = uriOf(request, scope);
    if (scope.clientContext.getAttribute(WARM_UP_ATTRIBUTE) == WARM_UP) {
      return chain.proceed(request, scope);
    }
    ExecChain.Scope guarded = guarded(request, scope, uri);
    Optional<DestinationLimiter> limiter = limiters.limiterFor(uri);
    if (limiter.isEmpty()) {
      return chain.proceed(request, guarded);
    }
    Slot slot;
    try {
      slot = limiter.get().acquire();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      InterruptedIOException interrupted =
          new InterruptedIOException("interrupted while waiting for a turn to send " + uri);
      interrupted.initCause(e);
      throw interrupted;
    }
    ClassicHttpResponse response;
    try {
      response = chain.proceed(request, guarded);
    } catch (IOException | HttpException | RuntimeException | Error e) {
      slot.close();
      throw e;
    }
    try {
      Header retryAfter = response.getFirstHeader("Retry-After");
      limiter
          .get()
          .noteAnswer(response.getCode(), retryAfter == null ? null : retryAfter.getValue(), uri);
      HttpEntity entity = response.getEntity();
      if (entity == null) {
        slot.close();
      } else {
        response.setEntity(new SlotReleasingEntity(entity, slot));
      }
      return response;
    } catch (RuntimeException | Error e) {
      // No one will close this response. Closing it would read its body to the end, as long as
      // the destination makes it: the connection is closed instead, which ends its lease.
      try {
        guarded.execRuntime.discardEndpoint();
      } finally {
        slot.close();
      }
      throw e;
    }
  }

  /**
   * The scope to send {@code request} in, judged against the exchange's first request (see the
   * class comment): the same, or with the route pinned to the address checked; the request loses
   * the caller's credentials on another origin.
   *
   * @throws RedirectException if it must not be sent
   */
  private ExecChain.Scope guarded(ClassicHttpRequest request, ExecChain.Scope scope, URI uri)
      throws RedirectException {
    Object kept = scope.clientContext.getAttribute(FIRST_REQUEST_ATTRIBUTE);
    if (!(kept instanceof FirstRequest first) || !first.exchangeId().equals(scope.exchangeId)) {
      scope.clientContext.setAttribute(
          FIRST_REQUEST_ATTRIBUTE,
          new FirstRequest(scope.exchangeId, uri, addresses.requested(uri.getHost())));
      return scope;
    }
    AddressPolicy.Verdict verdict = first.host().hop(uri.getHost());
    if (verdict instanceof AddressPolicy.Verdict.Refused refused) {
      throw new RedirectException(uri + " is not sent: " + refused.reason());
    }
    if (!Origins.same(first.uri(), uri)) {
      HttpEntity entity = request.getEntity();
      if (entity != null && entity.getContentLength() != 0) {
        throw new RedirectException(
            uri
                + " is not sent: it would repeat the request's entity"
                + " at another origin than "
                + first.uri());
      }
      for (String name : Origins.CREDENTIAL_HEADERS) {
        request.removeHeaders(name);
      }
    }
    return pinned(scope, ((AddressPolicy.Verdict.Allowed) verdict).addresses());
  }

  /** {@code scope} with its direct route's target pinned to the first of {@code checked}. */
  private static ExecChain.Scope pinned(ExecChain.Scope scope, List<InetAddress> checked) {
    HttpRoute route = scope.route;
    if (checked.isEmpty() || route.getProxyHost() != null || route.getUnixDomainSocket() != null) {
      return scope;
    }
    HttpHost target = route.getTargetHost();
    HttpHost at =
        new HttpHost(
            target.getSchemeName(), checked.get(0), target.getHostName(), target.getPort());
    return new ExecChain.Scope(
        scope.exchangeId,
        new HttpRoute(at, route.getTargetName(), route.getLocalAddress(), route.isSecure()),
        scope.originalRequest,
        scope.execRuntime,
        scope.clientContext);
  }

  /** The request's absolute URI: a request down the chain may carry only its path. */
  private static URI uriOf(ClassicHttpRequest request, ExecChain.Scope scope)
      throws ProtocolException {
    try {
      URI uri = request.getUri();
      if (uri.getHost() != null) {
        return uri;
      }
      return new URI(scope.route.getTargetHost().toURI()).resolve(uri);
    } catch (URISyntaxException e) {
      throw new ProtocolException(
          "cannot tell which destination "
              + request.getRequestUri()
              + " goes to: "
              + e.getMessage(),
          e);
    }
  }

  /** An entity that closes its request's slot when its content ends or is closed. */
  private static final class SlotReleasingEntity extends HttpEntityWrapper {
    private final Slot slot;

    SlotReleasingEntity(HttpEntity entity, Slot slot) {
      super(entity);
      this.slot = slot;
    }

    @Override
    public InputStream getContent() throws IOException {
      InputStream content = super.getContent();
      return new FilterInputStream(content) {
        @Override
        public int read() throws IOException {
          return ended(super.read());
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
          return ended(super.read(b, off, len));
        }

        @Override
        public void close() throws IOException {
          slot.close();
          super.close();
        }

        private int ended(int read) {
          if (read == -1) {
            slot.close();
          }
          return read;
        }
      };
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
      try {
        super.writeTo(out);
      } finally {
        slot.close();
      }
    }

    @Override
    public void close() throws IOException {
      slot.close();
      super.close();
    }
  }
}
