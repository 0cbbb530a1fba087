package dev.pacer;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Decides whether a redirect answer is followed, and where to: the one redirect policy of {@link
 * PacedHttpClient}, which follows every hop it allows with a turn of its own.
 *
 * <p>Two scopes. {@link #sameOrigin} is {@link DestinationFetcher}'s: only hops within the
 * requested URL's own origin (scheme, host and port) are followed, each one a request to the same
 * destination, while another host has its own ceiling, which this destination's limiter cannot
 * hold; a hop must also pass the {@link AddressPolicy}. {@link #like} follows as the JDK's client
 * does under the same {@link HttpClient.Redirect} ({@code NORMAL}: anywhere but from https to
 * http; {@code ALWAYS}: anywhere), for a decorator whose {@link LimiterLookup} paces each host by
 * its own limiter. Either way at most {@code maxRedirects} are followed per request.
 */
final class Redirects {

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
    /** The requested URL's scheme, host and port, and an address {@link AddressPolicy} allows. */
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
    this.addresses = addresses;
  }

  /** Hops within the requested URL's origin that {@code addresses} allows, at most {@code max}. */
  static Redirects sameOrigin(int maxRedirects, AddressPolicy addresses) {
    return new Redirects(Scope.SAME_ORIGIN, maxRedirects, addresses);
  }

  /** As the JDK's client follows under {@code policy}, at most {@code max} hops. */
  static Redirects like(HttpClient.Redirect policy, int maxRedirects) {
    return switch (policy) {
      case NEVER -> new Redirects(Scope.NONE, 0, AddressPolicy.SYSTEM);
      case NORMAL -> new Redirects(Scope.NOT_TO_HTTP, maxRedirects, AddressPolicy.SYSTEM);
      case ALWAYS -> new Redirects(Scope.ANYWHERE, maxRedirects, AddressPolicy.SYSTEM);
    };
  }

  /** Whether redirects are followed at all: a policy that follows none is not asked. */
  boolean followsAny() {
    return scope != Scope.NONE;
  }

  /**
   * The request for hop {@code target} after {@code previous} answered {@code status}: a 303, or
   * a 301 or 302 to a POST, becomes a GET without a body, as browsers and the JDK's client do;
   * 307 and 308 repeat the method and body. Headers are kept.
   */
  static HttpRequest nextRequest(HttpRequest previous, int status, URI target) {
    HttpRequest.Builder next = HttpRequest.newBuilder(previous, (name, value) -> true).uri(target);
    boolean toGet = status == 303 || ((status == 301 || status == 302)
        && previous.method().equals("POST"));
    if (toGet) {
      next.GET();
    }
    return next.build();
  }

  static boolean isRedirect(int status) {
    return STATUSES.contains(status);
  }

  /**
   * The hop after {@code current} answered {@code status} with {@code location}, in a fetch of
   * {@code requested} that has followed {@code followed} redirects so far.
   */
  Next next(URI requested, URI current, int status, Optional<String> location, int followed) {
    String from = "redirect (HTTP " + status + ") from " + current;
    if (followed >= maxRedirects) {
      return new Next.Refuse(from + " is not followed: " + requested + " has already been"
          + " redirected " + followed + " times, the cap of maxRedirects " + maxRedirects);
    }
    if (location.isEmpty() || location.get().isBlank()) {
      return new Next.Refuse(from + " has no Location header");
    }
    URI target;
    try {
      target = current.resolve(new URI(location.get().strip())).normalize();
    } catch (URISyntaxException | IllegalArgumentException e) {
      return new Next.Refuse(from + " has an unparsable Location " + location.get() + ": "
          + e.getMessage());
    }
    if (scope == Scope.SAME_ORIGIN) {
      if (!sameOrigin(requested, target)) {
        return new Next.Refuse(from + " to another host " + target + " is not followed: that"
            + " host has its own ceiling, which " + requested.getHost() + "'s limiter does not"
            + " hold");
      }
      Optional<String> refusal = addresses.refusal(requested.getHost(), target.getHost());
      if (refusal.isPresent()) {
        return new Next.Refuse(from + " to " + target + " is not followed: " + refusal.get());
      }
    } else if (scope == Scope.NOT_TO_HTTP && target.getScheme() != null
        && "https".equalsIgnoreCase(current.getScheme())
        && !"https".equalsIgnoreCase(target.getScheme())) {
      return new Next.Refuse(from + " to " + target + " is not followed: Redirect.NORMAL never"
          + " goes from https to http");
    }
    return new Next.Follow(target);
  }

  static boolean sameOrigin(URI a, URI b) {
    return a.getScheme() != null && b.getScheme() != null && a.getHost() != null
        && b.getHost() != null
        && a.getScheme().equalsIgnoreCase(b.getScheme())
        && a.getHost().toLowerCase(Locale.ROOT).equals(b.getHost().toLowerCase(Locale.ROOT))
        && effectivePort(a) == effectivePort(b);
  }

  private static int effectivePort(URI uri) {
    if (uri.getPort() != -1) {
      return uri.getPort();
    }
    return switch (uri.getScheme().toLowerCase(Locale.ROOT)) {
      case "http" -> 80;
      case "https" -> 443;
      default -> -1;
    };
  }
}
