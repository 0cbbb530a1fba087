package dev.pacer.jdkhttp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.http.AddressPolicy;
import dev.pacer.http.Origins;
import dev.pacer.http.TestAddresses;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/** What a redirect hop carries, and which hops are followed, without a network. */
class RedirectsTest {

  private static final URI ORIGIN = URI.create("https://api.example.com/a");

  /** Every name resolves to a public address: only the origin rules decide. */
  private final AddressPolicy allPublic = TestAddresses.allPublic();

  /** A fake zone of names, as in AddressPolicyTest: no DNS, and a rebinding is a changed record. */
  private final Map<String, String> zone =
      new ConcurrentHashMap<>(
          Map.of(
              "example.com", "93.184.216.34",
              "evil.example", "127.0.0.1",
              "intranet.example", "10.1.2.3"));

  private final AddressPolicy policy = TestAddresses.zone(zone, new ArrayList<>());

  private static HttpRequest withCredentials(HttpRequest.Builder builder) {
    return builder
        .header("Authorization", "Bearer secret")
        .header("Proxy-Authorization", "Basic cHJveHk6c2VjcmV0")
        .header("Cookie", "session=secret")
        .header("X-Request-Id", "kept")
        .build();
  }

  @Test
  void aHopToAnotherOriginGoesWithoutTheCallersCredentials() {
    HttpRequest previous = withCredentials(HttpRequest.newBuilder(ORIGIN));
    for (URI other :
        new URI[] {
          URI.create("https://cdn.example.com/b"),
          URI.create("https://api.example.com:8443/b"),
          URI.create("http://api.example.com/b")
        }) {
      HttpRequest next = Redirects.nextRequest(previous, 302, other);
      assertThat(next.uri()).isEqualTo(other);
      assertThat(next.headers().map()).as("to %s", other).containsOnlyKeys("X-Request-Id");
    }
  }

  @Test
  void aHopWithinTheOriginKeepsEveryHeader() {
    HttpRequest previous = withCredentials(HttpRequest.newBuilder(ORIGIN));
    HttpRequest next =
        Redirects.nextRequest(previous, 302, URI.create("https://API.example.com:443/b"));
    assertThat(next.headers().map())
        .containsOnlyKeys("Authorization", "Proxy-Authorization", "Cookie", "X-Request-Id");
  }

  @Test
  void aBodyIsRepeatedWithinTheOriginButNeverToAnother() {
    HttpRequest post =
        withCredentials(
            HttpRequest.newBuilder(ORIGIN)
                .POST(HttpRequest.BodyPublishers.ofString("password=secret")));
    Redirects.Chain chain = Redirects.like(HttpClient.Redirect.ALWAYS, 5, allPublic).chain(ORIGIN);
    for (int status : new int[] {307, 308}) {
      assertThat(chain.next(post, status, Optional.of("/b"), 0))
          .isEqualTo(new Redirects.Next.Follow(URI.create("https://api.example.com/b")));
      assertThat(chain.next(post, status, Optional.of("https://collector.example/b"), 0))
          .isInstanceOfSatisfying(
              Redirects.Next.Refuse.class,
              refuse ->
                  assertThat(refuse.reason())
                      .contains("repeat the request's body at another origin"));
    }
    // A 303 drops the body: it may go anywhere the policy allows, without the credentials.
    assertThat(chain.next(post, 303, Optional.of("https://collector.example/b"), 0))
        .isEqualTo(new Redirects.Next.Follow(URI.create("https://collector.example/b")));
    HttpRequest empty =
        HttpRequest.newBuilder(ORIGIN).POST(HttpRequest.BodyPublishers.noBody()).build();
    assertThat(chain.next(empty, 307, Optional.of("https://collector.example/b"), 0))
        .isInstanceOf(Redirects.Next.Follow.class);
  }

  @Test
  void onlyHttpAndHttpsAreFollowed() {
    Redirects.Chain chain = Redirects.like(HttpClient.Redirect.ALWAYS, 5, allPublic).chain(ORIGIN);
    assertThat(
            chain.next(
                HttpRequest.newBuilder(ORIGIN).build(),
                302,
                Optional.of("ftp://files.example.com/x"),
                0))
        .isInstanceOfSatisfying(
            Redirects.Next.Refuse.class,
            refuse -> assertThat(refuse.reason()).contains("not an http or https URL"));
  }

  @Test
  void theOriginIsSchemeHostAndEffectivePort() {
    URI a = URI.create("http://Example.com/a");
    assertThat(Origins.same(a, URI.create("http://example.com:80/b"))).isTrue();
    assertThat(Origins.same(a, URI.create("https://example.com/b"))).isFalse();
    assertThat(Origins.same(a, URI.create("http://example.com:8080/b"))).isFalse();
    assertThat(Origins.same(a, URI.create("http://cdn.example.com/b"))).isFalse();
    assertThat(Origins.same(a, URI.create("mailto:x@example.com"))).isFalse();
    assertThat(Origins.isCredential("PROXY-Authorization")).isTrue();
    assertThat(Origins.isCredential("X-Api-Key")).isFalse();
  }

  /**
   * The fetcher's same-origin hop to the requested host itself: only the first answer, kept, tells
   * that the host was public; resolving it again would find it internal and allow the hop.
   */
  @Test
  void aSameOriginHopToARebindingNameIsNotFollowed() {
    Redirects.Chain chain =
        Redirects.sameOrigin(5, policy).chain(URI.create("http://example.com/a"));
    zone.put("example.com", "127.0.0.1");
    HttpRequest first = HttpRequest.newBuilder(URI.create("http://example.com/a")).build();
    Redirects.Next next = chain.next(first, 302, Optional.of("/b"), 0);
    assertThat(next)
        .isInstanceOfSatisfying(
            Redirects.Next.Refuse.class,
            refuse -> assertThat(refuse.reason()).contains("internal address 127.0.0.1"));
  }

  @Test
  void everyRedirectModeRefusesAHopFromAPublicHostIntoAnInternalNetwork() {
    for (java.net.http.HttpClient.Redirect mode :
        List.of(
            java.net.http.HttpClient.Redirect.NORMAL, java.net.http.HttpClient.Redirect.ALWAYS)) {
      Redirects.Chain chain =
          Redirects.like(mode, 5, policy).chain(URI.create("http://example.com/a"));
      HttpRequest first = HttpRequest.newBuilder(URI.create("http://example.com/a")).build();
      assertThat(chain.next(first, 302, Optional.of("http://169.254.169.254/latest"), 0))
          .as("%s", mode)
          .isInstanceOf(Redirects.Next.Refuse.class);
      assertThat(chain.next(first, 302, Optional.of("http://example.com/b"), 0))
          .as("%s", mode)
          .isEqualTo(new Redirects.Next.Follow(URI.create("http://example.com/b")));
    }
  }
}
