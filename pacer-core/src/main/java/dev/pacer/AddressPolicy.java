package dev.pacer;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Optional;

/**
 * Refuses a redirect hop into an internal network: a hop whose host resolves to a loopback,
 * private (site-local), link-local, wildcard or IPv6 unique-local (fc00::/7) address, unless the
 * requested URL's own host resolves to one too. A public destination's redirect thus cannot aim a
 * worker at the database, a metadata service or the host itself, while a local destination (a test
 * server on 127.0.0.1, a service on the private network) still redirects within itself.
 *
 * <p>The fetcher only follows hops to the requested URL's own scheme, host and port, so this check
 * matters when the same name resolves differently between the two lookups (DNS rebinding). The
 * HTTP client resolves the name once more when it connects; on Java 17 that lookup cannot be
 * pinned, so this narrows the window rather than closing it.
 */
final class AddressPolicy {

  /** Resolves a host name to its addresses, as {@link InetAddress#getAllByName}. */
  @FunctionalInterface
  interface Resolver {
    InetAddress[] resolve(String host) throws UnknownHostException;
  }

  static final AddressPolicy SYSTEM = new AddressPolicy(InetAddress::getAllByName);

  private final Resolver resolver;

  AddressPolicy(Resolver resolver) {
    this.resolver = resolver;
  }

  /** Why a hop to {@code hopHost} is refused, for a fetch of a URL on {@code requestedHost}. */
  Optional<String> refusal(String requestedHost, String hopHost) {
    InetAddress[] hop;
    try {
      hop = resolver.resolve(hopHost);
    } catch (UnknownHostException e) {
      return Optional.of("its host " + hopHost + " does not resolve");
    }
    for (InetAddress address : hop) {
      if (isInternal(address) && !resolvesInternal(requestedHost)) {
        return Optional.of("its host " + hopHost + " resolves to the internal address "
            + address.getHostAddress() + ", and " + requestedHost + " is not internal");
      }
    }
    return Optional.empty();
  }

  private boolean resolvesInternal(String host) {
    try {
      for (InetAddress address : resolver.resolve(host)) {
        if (isInternal(address)) {
          return true;
        }
      }
      return false;
    } catch (UnknownHostException e) {
      return false;
    }
  }

  static boolean isInternal(InetAddress address) {
    byte[] raw = address.getAddress();
    boolean uniqueLocal = raw.length == 16 && (raw[0] & 0xfe) == 0xfc;
    return address.isLoopbackAddress() || address.isSiteLocalAddress()
        || address.isLinkLocalAddress() || address.isAnyLocalAddress() || uniqueLocal;
  }
}
