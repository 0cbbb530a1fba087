package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Which redirect hops lead into an internal network, on a fake resolver: no DNS. */
class AddressPolicyTest {

  private static final Map<String, String> NAMES = Map.of(
      "example.com", "93.184.216.34",
      "evil.example", "127.0.0.1",
      "intranet.example", "10.1.2.3",
      "local.test", "127.0.0.1");

  private final AddressPolicy policy = new AddressPolicy(host -> {
    String literal = NAMES.get(host);
    if (literal == null && !host.matches("[0-9.]+|\\[?[0-9a-fA-F:]+]?")) {
      throw new UnknownHostException(host);
    }
    return new InetAddress[] {InetAddress.getByName(literal != null ? literal : host)};
  });

  @Test
  void aPublicHostMayNotRedirectToANameThatResolvesToLoopback() {
    assertThat(policy.refusal("example.com", "evil.example")).get().asString()
        .contains("evil.example").contains("127.0.0.1").contains("example.com is not internal");
  }

  @ParameterizedTest
  @ValueSource(strings = {"127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
      "0.0.0.0", "[::1]", "[fe80::1]", "[fc00::1]", "[fd12:3456::1]"})
  void everyInternalRangeIsRefusedFromAPublicHost(String internal) {
    assertThat(policy.refusal("example.com", internal)).isPresent();
  }

  @ParameterizedTest
  @ValueSource(strings = {"93.184.216.34", "172.32.0.1", "[2606:2800:220:1::1]", "example.com"})
  void publicAddressesAreAllowed(String address) {
    assertThat(policy.refusal("example.com", address)).isEmpty();
  }

  @Test
  void anInternalHostMayRedirectWithinInternalAddresses() {
    assertThat(policy.refusal("127.0.0.1", "127.0.0.1")).isEmpty();
    assertThat(policy.refusal("local.test", "evil.example")).isEmpty();
    assertThat(policy.refusal("intranet.example", "192.168.1.1")).isEmpty();
  }

  @Test
  void aHopThatDoesNotResolveIsRefused() {
    assertThat(policy.refusal("example.com", "nowhere.invalid")).get().asString()
        .contains("does not resolve");
  }

  @Test
  void theRedirectDecisionAppliesThePolicyAfterTheOriginCheck() {
    // The same name resolving differently between the two lookups (DNS rebinding).
    int[] calls = {0};
    AddressPolicy rebinding = new AddressPolicy(host -> new InetAddress[] {
        InetAddress.getByName(calls[0]++ == 0 ? "127.0.0.1" : "93.184.216.34")});
    Redirects redirects = Redirects.sameOrigin(5, rebinding);
    URI requested = URI.create("http://example.com/a");
    Redirects.Next next = redirects.next(requested, requested, 302, Optional.of("/b"), 0);
    assertThat(next).isInstanceOf(Redirects.Next.Refuse.class);
    assertThat(((Redirects.Next.Refuse) next).reason()).contains("internal address 127.0.0.1");
  }

  @Test
  void theOriginIsSchemeHostAndEffectivePort() {
    URI a = URI.create("http://Example.com/a");
    assertThat(Redirects.sameOrigin(a, URI.create("http://example.com:80/b"))).isTrue();
    assertThat(Redirects.sameOrigin(a, URI.create("https://example.com/b"))).isFalse();
    assertThat(Redirects.sameOrigin(a, URI.create("http://example.com:8080/b"))).isFalse();
    assertThat(Redirects.sameOrigin(a, URI.create("http://cdn.example.com/b"))).isFalse();
    assertThat(Redirects.sameOrigin(a, URI.create("mailto:x@example.com"))).isFalse();
  }
}
