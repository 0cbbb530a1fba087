package dev.pacer.jdkhttp.internal;

import dev.pacer.LimiterLookup;
import dev.pacer.http.AddressPolicy;
import dev.pacer.http.Origins;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Decides whether a redirect answer is followed, and where to: the one redirect policy of {@code
 * PacedHttpClient}, which follows every hop it allows with a turn of its own.
 *
 * <p>Two scopes. {@link #sameOrigin} is {@code DestinationFetcher}'s: only hops within the
 * requested URL's own origin (scheme, host and port) are followed, each one a request to the same
 * destination, while another host has its own ceiling, which this destination's limiter cannot
 * hold. {@link #like} follows as the JDK's client does under the same {@link HttpClient.Redirect}
 * ({@code NORMAL}: anywhere but from https to http; {@code ALWAYS}: anywhere), for a decorator
 * whose {@link LimiterLookup} paces each host by its own limiter. Either way at most {@code
 * maxRedirects} are followed per request, only to http and https URLs, never from a public host
 * into an internal network ({@link AddressPolicy}, the requested host classified once by {@link
 * #chain} before the first request), and never with a request body to another origin, nor with the
 * caller's credentials ({@link Origins}).
 */
public final class Redirects {

  static final Set<Integer> STATUSES = Set.of(301, 302, 303, 307, 308);

  /** Where to go after a redirect answer. */
  sealed interface Next {
    record Follow(URI uri) implements Next {}

    record Refuse(String reason) implements Next {}
  }

  /** Where hops may go. */
  private enum Scope {
    /** None: redirects are returned as they are ({@link HttpClient.Redirect#NEVER}). */
    NONE,
    /** The requested URL's scheme, host and port. */
    SAME_ORIGIN,
    /** Anywhere but from https to http ({@link HttpClient.Redirect#NORMAL}). */
    NOT_TO_HTTP,
    /** Anywhere ({@link HttpClient.Redirect#ALWAYS}). */
    ANYWHERE
  }

  private final Scope scope;
  private final int maxRedirects;
  private final AddressPolicy addresses;

  private Redirects(Scope scope, int maxRedirects, AddressPolicy addresses) {
    this.scope = scope;
    this.maxRedirects = maxRedirects;
    this.addresses = Objects.requireNonNull(addresses, "addresses");
  }

  /** Hops within the requested URL's origin that {@code addresses} allows, at most {@code max}. */
  public static Redirects sameOrigin(int maxRedirects, AddressPolicy addresses) {
    return new Redirects(Scope.SAME_ORIGIN, maxRedirects, addresses);
  }

  /** As the JDK's client follows under {@code policy}, and {@code addresses} allows. */
  public static Redirects like(
      HttpClient.Redirect policy, int maxRedirects, AddressPolicy addresses) {
    return switch (policy) {
      case NEVER -> new Redirects(Scope.NONE, 0, addresses);
      case NORMAL -> new Redirects(Scope.NOT_TO_HTTP, maxRedirects, addresses);
      case ALWAYS -> new Redirects(Scope.ANYWHERE, maxRedirects, addresses);
    };
  }

  /** Whether redirects are followed at all: a policy that follows none is not asked. */
  boolean followsAny() {
    return scope != Scope.NONE;
  }

  /**
   * The redirects of a request for {@code requested}, its host classified now: call it once, before
   * that request is sent.
   */
  Chain chain(URI requested) {
    return new Chain(requested, addresses.requested(requested.getHost()));
  }

  /**
   * The request for hop {@code target} after {@code previous} answered {@code status}: a 303, or a
   * 301 or 302 to a POST, becomes a GET without a body, as browsers and the JDK's client do; 307
   * and 308 repeat the method and body. Headers are kept, but for the caller's credentials ({@link
   * Origins#CREDENTIAL_HEADERS}) on a hop to another origin.
   */
  static HttpRequest nextRequest(HttpRequest previous, int status, URI target) {
    boolean sameOrigin = Origins.same(previous.uri(), target);
    HttpRequest.Builder next =
        HttpRequest.newBuilder(previous, (name, value) -> sameOrigin || !Origins.isCredential(name))
            .uri(target);
    if (becomesGet(status, previous.method())) {
      next.GET();
    }
    return next.build();
  }

  private static boolean becomesGet(int status, String method) {
    return status == 303 || ((status == 301 || status == 302) && method.equals("POST"));
  }

  /** Whether the hop after {@code previous} answered {@code status} would repeat a body. */
  private static boolean repeatsBody(HttpRequest previous, int status) {
    return !becomesGet(status, previous.method())
        && previous.bodyPublisher().map(body -> body.contentLength() != 0).orElse(false);
  }

  static boolean isRedirect(int status) {
    return STATUSES.contains(status);
  }

  /** One request's redirects: the URL it asked for, and its host as classified before it left. */
  final class Chain {
    private final URI requested;
    private final AddressPolicy.RequestedHost host;

    private Chain(URI requested, AddressPolicy.RequestedHost host) {
      this.requested = requested;
      this.host = host;
    }

    /**
     * The hop after {@code current} answered {@code status} with {@code location}, this chain
     * having followed {@code followed} redirects so far.
     */
    Next next(HttpRequest current, int status, Optional<String> location, int followed) {
      String from = "redirect (HTTP " + status + ") from " + current.uri();
      if (followed >= maxRedirects) {
        return new Next.Refuse(
            from
                + " is not followed: "
                + requested
                + " has already been"
                + " redirected "
                + followed
                + " times, the cap of maxRedirects "
                + maxRedirects);
      }
      if (location.isEmpty() || location.get().isBlank()) {
        return new Next.Refuse(from + " has no Location header");
      }
      URI target;
      try {
        target = current.uri().resolve(new URI(location.get().strip())).normalize();
      } catch (URISyntaxException | IllegalArgumentException e) {
        return new Next.Refuse(
            from + " has an unparsable Location " + location.get() + ": " + e.getMessage());
      }
      String notFollowed = from + " to " + target + " is not followed: ";
      if (scope == Scope.SAME_ORIGIN && !Origins.same(requested, target)) {
        return new Next.Refuse(
            from
                + " to another host "
                + target
                + " is not followed: that"
                + " host has its own ceiling, which "
                + requested.getHost()
                + "'s limiter does not"
                + " hold");
      }
      if (!"http".equalsIgnoreCase(target.getScheme())
          && !"https".equalsIgnoreCase(target.getScheme())) {
        return new Next.Refuse(notFollowed + "it is not an http or https URL");
      }
      if (scope == Scope.NOT_TO_HTTP
          && "https".equalsIgnoreCase(current.uri().getScheme())
          && !"https".equalsIgnoreCase(target.getScheme())) {
        return new Next.Refuse(notFollowed + "Redirect.NORMAL never goes from https to http");
      }
      if (repeatsBody(current, status) && !Origins.same(current.uri(), target)) {
        return new Next.Refuse(
            notFollowed + "it would repeat the request's body at another" + " origin");
      }
      if (host.hop(target.getHost()) instanceof AddressPolicy.Verdict.Refused refused) {
        return new Next.Refuse(notFollowed + refused.reason());
      }
      return new Next.Follow(target);
    }
  }
}
