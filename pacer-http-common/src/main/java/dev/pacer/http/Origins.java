package dev.pacer.http;

import java.net.URI;
import java.util.Locale;
import java.util.Set;

/**
 * What a redirect to another origin may carry, the same rule for every Pacer client. An origin is a
 * URL's scheme, host and port (the scheme's own port when the URL names none). The credentials a
 * caller puts in a request's headers ({@link #CREDENTIAL_HEADERS}) are meant for the origin it
 * asked: a hop to another origin goes without them, as browsers send it (the JDK's own client
 * copies them on Java 17, and OkHttp drops only {@code Authorization}). A request body is meant for
 * that origin too: a 307 or 308 that would repeat it at another origin is not followed at all,
 * since the body itself may be the secret (a login form, a document). Hops within the origin keep
 * both.
 */
public final class Origins {

  /**
   * The headers that carry a caller's credentials, lower-case: {@code authorization}, {@code
   * proxy-authorization} and {@code cookie}.
   */
  public static final Set<String> CREDENTIAL_HEADERS =
      Set.of("authorization", "proxy-authorization", "cookie");

  private Origins() {}

  /**
   * Whether {@code a} and {@code b} have one origin: scheme and host equal ignoring case, and the
   * same port once a missing one is the scheme's own (80 for http, 443 for https). A URI without a
   * scheme or a host has no origin, and so none in common with any other.
   *
   * @param a a URL
   * @param b another URL
   * @return true if both have the same scheme, host and port
   */
  public static boolean same(URI a, URI b) {
    return a.getScheme() != null
        && b.getScheme() != null
        && a.getHost() != null
        && b.getHost() != null
        && a.getScheme().equalsIgnoreCase(b.getScheme())
        && a.getHost().toLowerCase(Locale.ROOT).equals(b.getHost().toLowerCase(Locale.ROOT))
        && effectivePort(a) == effectivePort(b);
  }

  /**
   * Whether a header of this name carries a caller's credentials.
   *
   * @param name a header name, in any case
   * @return true for the names in {@link #CREDENTIAL_HEADERS}
   */
  public static boolean isCredential(String name) {
    return CREDENTIAL_HEADERS.contains(name.toLowerCase(Locale.ROOT));
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
