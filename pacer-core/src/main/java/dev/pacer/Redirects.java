package dev.pacer;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Decides whether the fetcher follows a redirect answer, and where to.
 *
 * <p>Only hops within the requested URL's own origin (scheme, host and port) are followed: each one
 * is a request to the same destination and takes its own turn, while another host has its own
 * ceiling, which this destination's limiter cannot hold. A hop must also pass the {@link
 * AddressPolicy}, and at most {@code maxRedirects} are followed per fetch.
 */
final class Redirects {

  static final Set<Integer> STATUSES = Set.of(301, 302, 303, 307, 308);

  /** Where to go after a redirect answer. */
  sealed interface Next {
    record Follow(URI uri) implements Next {}

    record Refuse(String reason) implements Next {}
  }

  private final int maxRedirects;
  private final AddressPolicy addresses;

  Redirects(int maxRedirects, AddressPolicy addresses) {
    this.maxRedirects = maxRedirects;
    this.addresses = addresses;
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
    if (!sameOrigin(requested, target)) {
      return new Next.Refuse(from + " to another host " + target + " is not followed: that host"
          + " has its own ceiling, which " + requested.getHost() + "'s limiter does not hold");
    }
    Optional<String> refusal = addresses.refusal(requested.getHost(), target.getHost());
    if (refusal.isPresent()) {
      return new Next.Refuse(from + " to " + target + " is not followed: " + refusal.get());
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
