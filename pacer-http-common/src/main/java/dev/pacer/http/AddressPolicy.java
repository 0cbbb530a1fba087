package dev.pacer.http;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * Refuses a redirect hop from a public host into an internal network, for every Pacer client: a
 * destination found on the internet cannot aim a worker at the database, a cloud metadata service
 * (169.254.169.254) or the host itself, while a local destination (a test server on 127.0.0.1, a
 * service on the private network) still redirects within itself.
 *
 * <h2>Resolved once, remembered</h2>
 *
 * The requested URL's host is classified once, before its first request is sent ({@link
 * #requested(String)}): it is internal if any address it resolves to is, public otherwise (a host
 * that does not resolve counts as public, so that its hops are checked). The answer is kept for the
 * whole exchange ({@link RequestedHost}), and each hop is judged against it ({@link
 * RequestedHost#hop(String)}): from a public host, a hop whose host resolves to any internal
 * address, or does not resolve, is {@linkplain Verdict.Refused refused}. The requested host is
 * never resolved again, so a name that answers with a public address for the first request and with
 * an internal one for the next (DNS rebinding) is refused on that hop, whether the hop goes to the
 * same name or another.
 *
 * <h2>The address the connection uses</h2>
 *
 * A client that can tell which address a request's connection uses passes it ({@link
 * #requested(String, InetAddress)}, {@link RequestedHost#hop(String, InetAddress)}): the check is
 * then made on the resolution the client connected with, not on a second lookup. OkHttp's network
 * interceptor sees its connection's route; Apache HttpClient 5's chain handler resolves the hop
 * itself and pins the route to the address it checked. The JDK's client resolves each host itself
 * when it connects and shows no one the address, so for {@code PacedHttpClient} the check is a
 * lookup of its own just before the hop, the JVM's cache of answers (30 s by default) making the
 * client's lookup agree with it; a name that changes its answer between the two lookups is beyond
 * what Pacer can refuse with that client (docs/integrations.md, "Redirects").
 *
 * <h2>What is internal</h2>
 *
 * {@link #isInternal}: IPv4 0.0.0.0/8 (this network, 0.0.0.0 among it), 10.0.0.0/8, 100.64.0.0/10
 * (shared, carrier-grade NAT), 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, 192.168.0.0/16,
 * 198.18.0.0/15 (benchmarking), 224.0.0.0/4 (multicast) and 240.0.0.0/4 (reserved, the broadcast
 * address 255.255.255.255 its last); IPv6 fc00::/7 (unique local), fe80::/10 (link-local),
 * fec0::/10 (site-local), ff00::/8 (multicast), and every form that carries an IPv4 address, which
 * is judged as that address: ::/96 (IPv4-compatible, :: and ::1 among them), ::ffff:0:0/96
 * (IPv4-mapped), 64:ff9b::/96 (NAT64) and 2002::/16 (6to4).
 */
public final class AddressPolicy {

  /** Resolves a host name to its addresses, as {@link InetAddress#getAllByName}. */
  @FunctionalInterface
  interface Resolver {
    InetAddress[] resolve(String host) throws UnknownHostException;
  }

  private static final AddressPolicy SYSTEM =
      new AddressPolicy(InetAddress::getAllByName, AddressPolicy::isInternal);

  private static final List<Block> INTERNAL_V4 =
      List.of(
          Block.v4(8, 0, 0, 0, 0),
          Block.v4(8, 10, 0, 0, 0),
          Block.v4(10, 100, 64, 0, 0),
          Block.v4(8, 127, 0, 0, 0),
          Block.v4(16, 169, 254, 0, 0),
          Block.v4(12, 172, 16, 0, 0),
          Block.v4(16, 192, 168, 0, 0),
          Block.v4(15, 198, 18, 0, 0),
          Block.v4(4, 224, 0, 0, 0),
          Block.v4(4, 240, 0, 0, 0));
  private static final List<Block> INTERNAL_V6 =
      List.of(Block.v6(7, 0xfc00), Block.v6(10, 0xfe80), Block.v6(10, 0xfec0), Block.v6(8, 0xff00));

  /** The IPv6 forms that carry an IPv4 address in their last 32 bits. */
  private static final List<Block> CARRYING_V4_LAST =
      List.of(Block.v6(96), Block.v6(96, 0, 0, 0, 0, 0, 0xffff), Block.v6(96, 0x64, 0xff9b));

  /** 6to4, which carries an IPv4 address in bits 16 to 47. */
  private static final Block SIX_TO_FOUR = Block.v6(16, 0x2002);

  private final Resolver resolver;
  private final Predicate<InetAddress> internal;

  AddressPolicy(Resolver resolver, Predicate<InetAddress> internal) {
    this.resolver = Objects.requireNonNull(resolver, "resolver");
    this.internal = Objects.requireNonNull(internal, "internal");
  }

  /**
   * The policy every Pacer client uses: names resolved by the JVM ({@link
   * InetAddress#getAllByName}), internal as {@link #isInternal} says.
   *
   * @return the system policy
   */
  public static AddressPolicy system() {
    return SYSTEM;
  }

  /**
   * Classifies a request's own host by resolving it now: call it once, before the first request of
   * an exchange is sent, and judge every hop of the exchange by the answer.
   *
   * @param host the requested URL's host
   * @return the host and whether it was public
   */
  public RequestedHost requested(String host) {
    Objects.requireNonNull(host, "host");
    try {
      for (InetAddress address : resolver.resolve(host)) {
        if (internal.test(address)) {
          return new RequestedHost(host, false);
        }
      }
    } catch (UnknownHostException e) {
      // Not resolvable here: public, so that its hops are checked.
    }
    return new RequestedHost(host, true);
  }

  /**
   * Classifies a request's own host by the address its connection uses: for a client that shows it,
   * so that the classification is the connection's own resolution.
   *
   * @param host the requested URL's host
   * @param connected the address the first request's connection goes to
   * @return the host and whether it was public
   */
  public RequestedHost requested(String host, InetAddress connected) {
    return new RequestedHost(
        Objects.requireNonNull(host, "host"),
        !internal.test(Objects.requireNonNull(connected, "connected")));
  }

  /**
   * Whether {@code address} belongs to an internal network (the ranges in the class comment).
   *
   * @param address an IPv4 or IPv6 address
   * @return true if a request from a public host must not reach it
   */
  public static boolean isInternal(InetAddress address) {
    byte[] raw = address.getAddress();
    if (raw.length == 4) {
      return INTERNAL_V4.stream().anyMatch(block -> block.contains(raw));
    }
    for (Block carrying : CARRYING_V4_LAST) {
      if (carrying.contains(raw)) {
        return isInternalV4(Arrays.copyOfRange(raw, 12, 16));
      }
    }
    if (SIX_TO_FOUR.contains(raw)) {
      return isInternalV4(Arrays.copyOfRange(raw, 2, 6));
    }
    return INTERNAL_V6.stream().anyMatch(block -> block.contains(raw));
  }

  private static boolean isInternalV4(byte[] raw) {
    return INTERNAL_V4.stream().anyMatch(block -> block.contains(raw));
  }

  /**
   * A request's own host, classified once: whether it was public when its exchange began. Every hop
   * of the exchange is judged by it.
   */
  public final class RequestedHost {
    private final String host;
    private final boolean isPublic;

    private RequestedHost(String host, boolean isPublic) {
      this.host = host;
      this.isPublic = isPublic;
    }

    /**
     * The requested URL's host.
     *
     * @return the host name or literal
     */
    public String host() {
      return host;
    }

    /**
     * Whether the host was public when it was classified: its hops are then checked.
     *
     * @return false if any of its addresses was internal
     */
    public boolean isPublic() {
      return isPublic;
    }

    /**
     * Judges a hop to {@code hopHost}, resolving it now. From an internal host every hop is
     * allowed, unresolved; from a public one, a hop whose host resolves to any internal address, or
     * does not resolve, is refused.
     *
     * @param hopHost the host the hop goes to
     * @return {@link Verdict.Allowed} with the addresses checked, or {@link Verdict.Refused}
     */
    public Verdict hop(String hopHost) {
      if (!isPublic) {
        return new Verdict.Allowed(List.of());
      }
      if (hopHost == null || hopHost.isEmpty()) {
        return new Verdict.Refused("it names no host");
      }
      InetAddress[] addresses;
      try {
        addresses = resolver.resolve(hopHost);
      } catch (UnknownHostException e) {
        return new Verdict.Refused("its host " + hopHost + " does not resolve");
      }
      for (InetAddress address : addresses) {
        if (internal.test(address)) {
          return refusal(hopHost, address);
        }
      }
      return new Verdict.Allowed(List.of(addresses));
    }

    /**
     * Judges a hop to {@code hopHost} whose connection goes to {@code connected}: the client's own
     * resolution, not a second lookup.
     *
     * @param hopHost the host the hop goes to
     * @param connected the address its connection goes to
     * @return {@link Verdict.Allowed} with that address, or {@link Verdict.Refused}
     */
    public Verdict hop(String hopHost, InetAddress connected) {
      Objects.requireNonNull(connected, "connected");
      if (isPublic && internal.test(connected)) {
        return refusal(hopHost, connected);
      }
      return new Verdict.Allowed(List.of(connected));
    }

    private Verdict refusal(String hopHost, InetAddress address) {
      return new Verdict.Refused(
          "its host "
              + hopHost
              + " resolves to the internal address "
              + address.getHostAddress()
              + ", and the requested host "
              + host
              + " was public");
    }

    @Override
    public String toString() {
      return host + (isPublic ? " (public)" : " (internal)");
    }
  }

  /** Whether a hop may be sent. */
  public sealed interface Verdict {

    /**
     * The hop may go.
     *
     * @param addresses the addresses it was checked against: its host's resolution, or the
     *     connection's address; none when the requested host was internal (nothing is checked)
     */
    record Allowed(List<InetAddress> addresses) implements Verdict {
      /**
       * An allowed hop.
       *
       * @param addresses the addresses checked
       */
      public Allowed {
        addresses = List.copyOf(addresses);
      }
    }

    /**
     * The hop must not be sent.
     *
     * @param reason why, naming the host and address
     */
    record Refused(String reason) implements Verdict {}
  }

  /** An address prefix: the first {@code bits} bits of {@code prefix}. */
  private record Block(byte[] prefix, int bits) {

    static Block v4(int bits, int a, int b, int c, int d) {
      return new Block(new byte[] {(byte) a, (byte) b, (byte) c, (byte) d}, bits);
    }

    /** An IPv6 prefix from its leading 16-bit groups, the rest zero. */
    static Block v6(int bits, int... groups) {
      byte[] prefix = new byte[16];
      for (int i = 0; i < groups.length; i++) {
        prefix[2 * i] = (byte) (groups[i] >>> 8);
        prefix[2 * i + 1] = (byte) groups[i];
      }
      return new Block(prefix, bits);
    }

    boolean contains(byte[] address) {
      if (address.length != prefix.length) {
        return false;
      }
      int whole = bits / 8;
      for (int i = 0; i < whole; i++) {
        if (address[i] != prefix[i]) {
          return false;
        }
      }
      int rest = bits % 8;
      if (rest == 0) {
        return true;
      }
      int mask = (0xff << (8 - rest)) & 0xff;
      return (address[whole] & mask) == (prefix[whole] & mask);
    }
  }
}
