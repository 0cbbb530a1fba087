package dev.pacer;

import java.net.InetAddress;

/**
 * The address policy's seam for tests whose destinations all listen on loopback, which the real
 * policy counts as internal: under {@link #publicLoopback}, 127.0.0.1 stands for the public
 * internet and every other address is judged as {@link AddressPolicy#isInternal} judges it, so a
 * destination on 127.0.0.1 is a public host and one on 127.0.0.2 an internal network.
 */
public final class TestAddresses {

  private TestAddresses() {}

  /** Names resolved by the JVM; 127.0.0.1 public, everything else as the real policy says. */
  public static AddressPolicy publicLoopback() {
    return new AddressPolicy(InetAddress::getAllByName,
        address -> !address.getHostAddress().equals("127.0.0.1")
            && AddressPolicy.isInternal(address));
  }

  /** {@code builder}, its redirects judged by {@code addresses}. */
  public static PacedHttpClient.Builder judgedBy(PacedHttpClient.Builder builder,
      AddressPolicy addresses) {
    return builder.addressPolicy(addresses);
  }
}
