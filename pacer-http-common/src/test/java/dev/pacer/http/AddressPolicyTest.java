package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Which redirect hops lead into an internal network, on a fake zone of names: no DNS. The zone
 * answers every lookup of a name the same until the test changes the name's record, as a DNS server
 * does; a rebinding is the test changing a record between the first request and a hop, and only the
 * policy's memory of the first answer can catch it.
 */
class AddressPolicyTest {

  private final Map<String, String> zone =
      new ConcurrentHashMap<>(
          Map.of(
              "example.com", "93.184.216.34",
              "evil.example", "127.0.0.1",
              "intranet.example", "10.1.2.3"));
  private final List<String> lookups = new ArrayList<>();
  private final AddressPolicy policy = TestAddresses.zone(zone, lookups);

  /**
   * Both ends of every internal range, and the address just outside each end (public, or the next
   * range's: then the row says so). IPv6 rows marked {@code mapped} are built as an {@link
   * Inet6Address} from their 16 bytes, which {@link InetAddress#getByName} would turn into IPv4.
   */
  @ParameterizedTest(name = "{0} internal={1}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          # 0.0.0.0/8, this network
          0.0.0.0                                 | true
          0.255.255.255                           | true
          1.0.0.0                                 | false
          # 10.0.0.0/8, private
          9.255.255.255                           | false
          10.0.0.0                                | true
          10.255.255.255                          | true
          11.0.0.0                                | false
          # 100.64.0.0/10, shared (carrier-grade NAT)
          100.63.255.255                          | false
          100.64.0.0                              | true
          100.127.255.255                         | true
          100.128.0.0                             | false
          # 127.0.0.0/8, loopback
          126.255.255.255                         | false
          127.0.0.0                               | true
          127.255.255.255                         | true
          128.0.0.0                               | false
          # 169.254.0.0/16, link-local (cloud metadata)
          169.253.255.255                         | false
          169.254.0.0                             | true
          169.254.169.254                         | true
          169.254.255.255                         | true
          169.255.0.0                             | false
          # 172.16.0.0/12, private
          172.15.255.255                          | false
          172.16.0.0                              | true
          172.31.255.255                          | true
          172.32.0.0                              | false
          # 192.168.0.0/16, private
          192.167.255.255                         | false
          192.168.0.0                             | true
          192.168.255.255                         | true
          192.169.0.0                             | false
          # 198.18.0.0/15, benchmarking
          198.17.255.255                          | false
          198.18.0.0                              | true
          198.19.255.255                          | true
          198.20.0.0                              | false
          # 224.0.0.0/4 multicast, then 240.0.0.0/4 reserved up to broadcast
          223.255.255.255                         | false
          224.0.0.0                               | true
          239.255.255.255                         | true
          240.0.0.0                               | true
          255.255.255.255                         | true
          # a public address, for the IPv6 forms below
          8.8.8.8                                 | false
          # ::/128 unspecified and ::1 loopback, both IPv4-compatible (::/96) of 0.0.0.0/8
          ::                                      | true
          ::1                                     | true
          # ::a.b.c.d, IPv4-compatible: judged as a.b.c.d
          ::0.255.255.255                         | true
          ::1.0.0.0                               | false
          ::127.0.0.1                             | true
          ::10.0.0.1                              | true
          ::8.8.8.8                               | false
          ::255.255.255.255                       | true
          0:0:0:0:0:1::                           | false
          ::fffe:ffff:ffff                        | false
          ::1:ffff:0:0                            | false
          # ::ffff:a.b.c.d, IPv4-mapped, given as an Inet6Address: judged as a.b.c.d
          mapped ::ffff:0.0.0.0                   | true
          mapped ::ffff:127.0.0.1                 | true
          mapped ::ffff:169.254.169.254           | true
          mapped ::ffff:8.8.8.8                   | false
          mapped ::ffff:255.255.255.255           | true
          # 64:ff9b::/96, NAT64: judged as the IPv4 address it carries
          64:ff9b::0.0.0.0                        | true
          64:ff9b::10.0.0.1                       | true
          64:ff9b::8.8.8.8                        | false
          64:ff9b::255.255.255.255                | true
          64:ff9b:0:0:0:1:a00:1                   | false
          64:ff9a:ffff:ffff:ffff:ffff:a00:1       | false
          # 2002::/16, 6to4: judged as the IPv4 address in bits 16-47
          2002:0000:0000::                        | true
          2002:7f00:0001::                        | true
          2002:a9fe:a9fe:ffff:ffff:ffff:ffff:ffff | true
          2002:0808:0808::1                       | false
          2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff | true
          2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff | false
          2003::                                  | false
          # fc00::/7, unique local
          fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff | false
          fc00::                                  | true
          fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff | true
          fe00::                                  | false
          # fe80::/10 link-local, fec0::/10 site-local, ff00::/8 multicast: fe80:: to the end
          fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff | false
          fe80::                                  | true
          febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff | true
          fec0::                                  | true
          feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff | true
          ff00::                                  | true
          ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff | true
          # public IPv6
          2606:2800:220:1::1                      | false
          """)
  void everyInternalRangeEndsWhereItShould(String address, boolean internal) throws Exception {
    assertThat(AddressPolicy.isInternal(parse(address))).isEqualTo(internal);
  }

  private static InetAddress parse(String row) throws UnknownHostException {
    if (!row.startsWith("mapped ")) {
      return InetAddress.getByName(row);
    }
    byte[] v4 = InetAddress.getByName(row.substring("mapped ::ffff:".length())).getAddress();
    byte[] v6 = new byte[16];
    v6[10] = (byte) 0xff;
    v6[11] = (byte) 0xff;
    System.arraycopy(v4, 0, v6, 12, 4);
    InetAddress mapped = Inet6Address.getByAddress(null, v6, -1);
    assertThat(mapped).isInstanceOf(Inet6Address.class);
    return mapped;
  }

  @Test
  void aPublicHostMayNotRedirectToANameThatResolvesToAnInternalAddress() {
    AddressPolicy.RequestedHost requested = policy.requested("example.com");
    assertThat(requested.isPublic()).isTrue();
    assertThat(requested.hop("evil.example"))
        .isInstanceOfSatisfying(
            AddressPolicy.Verdict.Refused.class,
            refused ->
                assertThat(refused.reason())
                    .contains("evil.example")
                    .contains("127.0.0.1")
                    .contains("example.com was public"));
    assertThat(requested.hop("169.254.169.254")).isInstanceOf(AddressPolicy.Verdict.Refused.class);
    assertThat(requested.hop("[fd12:3456::1]")).isInstanceOf(AddressPolicy.Verdict.Refused.class);
  }

  @Test
  void aPublicHopIsAllowedWithTheAddressesItWasCheckedAgainst() throws Exception {
    AddressPolicy.RequestedHost requested = policy.requested("example.com");
    assertThat(requested.hop("example.com"))
        .isEqualTo(
            new AddressPolicy.Verdict.Allowed(List.of(InetAddress.getByName("93.184.216.34"))));
    assertThat(requested.hop("[2606:2800:220:1::1]"))
        .isInstanceOf(AddressPolicy.Verdict.Allowed.class);
  }

  @Test
  void anInternalHostMayRedirectAnywhereAndNothingIsLookedUpForItsHops() {
    AddressPolicy.RequestedHost requested = policy.requested("intranet.example");
    assertThat(requested.isPublic()).isFalse();
    lookups.clear();
    assertThat(requested.hop("192.168.1.1"))
        .isEqualTo(new AddressPolicy.Verdict.Allowed(List.of()));
    assertThat(requested.hop("evil.example")).isInstanceOf(AddressPolicy.Verdict.Allowed.class);
    assertThat(lookups).isEmpty();
  }

  @Test
  void fromAPublicHostAHopThatDoesNotResolveIsRefused() {
    assertThat(policy.requested("example.com").hop("nowhere.invalid"))
        .isInstanceOfSatisfying(
            AddressPolicy.Verdict.Refused.class,
            refused -> assertThat(refused.reason()).contains("does not resolve"));
  }

  @Test
  void aRequestedHostThatDoesNotResolveCountsAsPublicSoThatItsHopsAreChecked() {
    AddressPolicy.RequestedHost requested = policy.requested("nowhere.invalid");
    assertThat(requested.isPublic()).isTrue();
    assertThat(requested.hop("evil.example")).isInstanceOf(AddressPolicy.Verdict.Refused.class);
  }

  @Test
  void theRequestedHostIsResolvedOnceAndARebindingToAnInternalAddressIsRefused() {
    AddressPolicy.RequestedHost requested = policy.requested("example.com");
    zone.put("example.com", "127.0.0.1"); // the name now answers with loopback, to every lookup
    assertThat(requested.hop("example.com"))
        .isInstanceOfSatisfying(
            AddressPolicy.Verdict.Refused.class,
            refused -> assertThat(refused.reason()).contains("internal address 127.0.0.1"));
    assertThat(lookups).as("the requested host once, then the hop").hasSize(2);
  }

  @Test
  void aConnectionsAddressIsJudgedAsItIsWithoutALookup() throws Exception {
    InetAddress publicAddress = InetAddress.getByName("93.184.216.34");
    InetAddress loopback = InetAddress.getByName("127.0.0.1");
    AddressPolicy.RequestedHost fromPublic = policy.requested("example.com", publicAddress);
    assertThat(fromPublic.isPublic()).isTrue();
    assertThat(fromPublic.hop("example.com", loopback))
        .isInstanceOf(AddressPolicy.Verdict.Refused.class);
    assertThat(fromPublic.hop("evil.example", publicAddress))
        .isEqualTo(new AddressPolicy.Verdict.Allowed(List.of(publicAddress)));
    assertThat(policy.requested("evil.example", loopback).hop("x", loopback))
        .isInstanceOf(AddressPolicy.Verdict.Allowed.class);
    assertThat(lookups).isEmpty();
  }
}
