package dev.pacer.http;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;

/**
 * The address policy's seam for tests whose destinations all listen on loopback, which the real
 * policy counts as internal: under {@link #publicLoopback}, 127.0.0.1 stands for the public
 * internet and every other address is judged as {@link AddressPolicy#isInternal} judges it, so a
 * destination on 127.0.0.1 is a public host and one on 127.0.0.2 an internal network.
 */
public final class TestAddresses {

  private TestAddresses() {}

  /**
   * Names resolved in {@code zone} (name to address literal; a literal not in it resolves to
   * itself, any other name does not resolve), each lookup recorded in {@code lookups}; internal as
   * the real policy says.
   */
  public static AddressPolicy zone(Map<String, String> zone, List<String> lookups) {
    return new AddressPolicy(
        host -> {
          lookups.add(host);
          String literal = zone.get(host);
          if (literal == null && !host.matches("[0-9.]+|\\[?[0-9a-fA-F:.]+]?")) {
            throw new UnknownHostException(host);
          }
          return new InetAddress[] {InetAddress.getByName(literal != null ? literal : host)};
        },
        AddressPolicy::isInternal);
  }

  /** Every name resolves to one public address: only the origin rules decide. */
  public static AddressPolicy allPublic() {
    return new AddressPolicy(
        host -> new InetAddress[] {InetAddress.getByName("93.184.216.34")},
        AddressPolicy::isInternal);
  }

  /** Names resolved by the JVM; 127.0.0.1 public, everything else as the real policy says. */
  public static AddressPolicy publicLoopback() {
    return new AddressPolicy(
        InetAddress::getAllByName,
        address ->
            !address.getHostAddress().equals("127.0.0.1") && AddressPolicy.isInternal(address));
  }
}
