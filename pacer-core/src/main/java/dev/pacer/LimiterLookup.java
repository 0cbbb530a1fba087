package dev.pacer;

import java.net.URI;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Which {@link DestinationLimiter} paces a request, from the request's URI: the one question every
 * HTTP client integration asks before each request it sends ({@code PacedHttpClient}, and the
 * OkHttp and Apache HttpClient integrations, pacer-okhttp and pacer-httpclient5). It is asked again
 * for every redirect hop, so a hop to another host is paced by that host's limiter, or by none.
 *
 * <p>Empty means the request is not paced: a client shared across an application also talks to
 * hosts that have no ceiling. A lookup that must not let anything through unpaced says so by
 * throwing, with a message naming the URI.
 */
@FunctionalInterface
public interface LimiterLookup {

  /**
   * The limiter pacing a request to {@code uri}, or empty if it is not paced.
   *
   * @param uri the request's URI, or a redirect hop's
   * @return the limiter that paces it, or empty
   */
  Optional<DestinationLimiter> limiterFor(URI uri);

  /**
   * Every request, whatever its host, paced by {@code limiter}.
   *
   * @param limiter the one limiter
   * @return a lookup that always names it
   */
  static LimiterLookup only(DestinationLimiter limiter) {
    Objects.requireNonNull(limiter, "limiter");
    Optional<DestinationLimiter> always = Optional.of(limiter);
    return uri -> always;
  }

  /**
   * By host: {@code destinations} says which destination a host (lower-case, without port) is, or
   * empty for a host that is not paced; the registry hands out that destination's one limiter in
   * this process.
   *
   * @param registry this process's registry
   * @param destinations the destination of a host, or empty if the host is not paced
   * @return a lookup by the URI's host
   */
  static LimiterLookup byHost(
      LimiterRegistry registry, Function<String, Optional<Destination>> destinations) {
    Objects.requireNonNull(registry, "registry");
    Objects.requireNonNull(destinations, "destinations");
    return uri -> {
      String host = uri.getHost();
      if (host == null) {
        return Optional.empty();
      }
      return destinations.apply(host.toLowerCase(Locale.ROOT)).map(registry::limiter);
    };
  }
}
