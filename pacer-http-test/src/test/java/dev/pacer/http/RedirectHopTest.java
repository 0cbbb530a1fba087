package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.pacer.Destination;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.FakeTime;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What a redirect hop carries and where it may go, for each of the three clients, against real
 * local destinations: an origin, another origin (another port), and an internal network. Every
 * destination listens on loopback, which the real policy counts as internal; under {@link
 * TestAddresses#publicLoopback} 127.0.0.1 stands for the public internet, so the first two are
 * public hosts, and the internal network listens on 127.0.0.2. Only 127.0.0.1 is paced, as a
 * metadata service would not be.
 */
class RedirectHopTest {

  private static final Duration BOUND = Duration.ofSeconds(20);
  private static final Map<String, String> CREDENTIALS =
      Map.of(
          "Authorization", "Bearer secret",
          "Proxy-Authorization", "Basic cHJveHk6c2VjcmV0",
          "Cookie", "session=secret");

  private final FakeTime time = new FakeTime();
  private DoorServer origin;
  private DoorServer other;
  private DoorServer internal;
  private LimiterLookup limiters;

  @BeforeEach
  void start() throws Exception {
    origin = new DoorServer(HopPaths::answer);
    other = new DoorServer(HopPaths::answer);
    internal = new DoorServer(InetAddress.getByName("127.0.0.2"), HopPaths::answer);
    LimiterRegistry registry = new LimiterRegistry(new LocalCursor(time), time);
    Destination destination =
        Destination.builder("redirects").ratePerSecond(10).maxConcurrency(4).build();
    limiters =
        LimiterLookup.byHost(
            registry,
            host -> host.equals("127.0.0.1") ? Optional.of(destination) : Optional.empty());
  }

  @AfterEach
  void stop() throws IOException {
    origin.close();
    other.close();
    internal.close();
  }

  private static Client.Sent get(URI uri) {
    return get(uri, Map.of());
  }

  private static Client.Sent get(URI uri, Map<String, String> headers) {
    return new Client.Sent("GET", uri, headers, Optional.empty());
  }

  private static Client.Sent post(URI uri, String body) {
    return new Client.Sent("POST", uri, Map.of(), Optional.of(body));
  }

  /** The credential headers a request arrived with. */
  private static Map<String, List<String>> credentials(Arrival arrival) {
    Map<String, List<String>> credentials = new TreeMap<>(arrival.request().headers());
    credentials.keySet().retainAll(Set.of("authorization", "proxy-authorization", "cookie"));
    return credentials;
  }

  /** The answer's status and body, or the failure's messages down its causes. */
  private static String outcome(Client.Getter client, Client.Sent sent) {
    try {
      Client.Answer answer = client.send(sent);
      return answer.status() + " " + answer.body();
    } catch (Exception e) {
      StringBuilder failure = new StringBuilder("failed:");
      for (Throwable t = e; t != null; t = t.getCause()) {
        failure.append(' ').append(t.getMessage());
      }
      return failure.toString();
    }
  }

  /**
   * One request per credential header, each beside a header that is kept. Apache's own redirect
   * strategy does not follow a hop to another host that carries {@code Authorization} or {@code
   * Cookie} at all (it returns the redirect), so of its three only the {@code Proxy-Authorization}
   * one arrives. The JDK's client never sends a caller's {@code Proxy-Authorization} to a
   * destination it reaches directly.
   */
  @ParameterizedTest
  @EnumSource(Client.class)
  void aHopToAnotherOriginArrivesWithoutTheCallersCredentials(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          try (Client.Getter client = kind.open(limiters, TestAddresses.publicLoopback())) {
            URI landed = HopPaths.uri(other, "/landed");
            CREDENTIALS.forEach(
                (name, value) ->
                    outcome(
                        client,
                        get(
                            HopPaths.redirect(origin, 302, landed.toString()),
                            Map.of(name, value, "X-Request-Id", "kept"))));
            assertThat(origin.arrivals()).hasSize(3);
            assertThat(other.arrivals())
                .hasSize(kind == Client.APACHE ? 1 : 3)
                .allSatisfy(
                    hop -> {
                      assertThat(hop.path()).isEqualTo("/landed");
                      assertThat(hop.request().headers())
                          .containsEntry("x-request-id", List.of("kept"));
                      assertThat(credentials(hop)).isEmpty();
                    });
          }
        });
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aHopWithinTheOriginKeepsThem(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          try (Client.Getter client = kind.open(limiters, TestAddresses.publicLoopback())) {
            assertThat(outcome(client, get(HopPaths.redirect(origin, 302, "/landed"), CREDENTIALS)))
                .isEqualTo("200 ok /landed");
            List<Arrival> arrivals = origin.arrivals();
            assertThat(arrivals).hasSize(2);
            assertThat(arrivals.get(1).path()).isEqualTo("/landed");
            assertThat(credentials(arrivals.get(1)))
                .isEqualTo(credentials(arrivals.get(0)))
                .containsEntry("authorization", List.of("Bearer secret"))
                .containsEntry("cookie", List.of("session=secret"));
          }
        });
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aPublicHostCannotRedirectIntoAnInternalNetwork(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          try (Client.Getter client = kind.open(limiters, TestAddresses.publicLoopback())) {
            URI metadata = HopPaths.uri(internal, "/latest/meta-data");
            String outcome =
                outcome(client, get(HopPaths.redirect(origin, 302, metadata.toString())));
            if (kind == Client.JDK) {
              assertThat(outcome).as("the redirect returned as it is").isEqualTo("302 moved");
            } else {
              assertThat(outcome).startsWith("failed:").contains("internal address 127.0.0.2");
            }
            assertThat(internal.arrivals()).isEmpty();
          }
        });
  }

  /** The refusal above is the policy's: an internal host reaches the same server. */
  @ParameterizedTest
  @EnumSource(Client.class)
  void anInternalHostRedirectsWithinItsNetwork(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          try (Client.Getter client = kind.open(limiters, AddressPolicy.system())) {
            URI metadata = HopPaths.uri(internal, "/latest/meta-data");
            assertThat(outcome(client, get(HopPaths.redirect(origin, 302, metadata.toString()))))
                .isEqualTo("200 ok /latest/meta-data");
            assertThat(HopPaths.paths(internal)).containsExactly("/latest/meta-data");
          }
        });
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aBodyIsRepeatedWithinTheOriginButNotAtAnother(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          try (Client.Getter client = kind.open(limiters, TestAddresses.publicLoopback())) {
            String toOther =
                outcome(
                    client,
                    post(
                        HopPaths.redirect(origin, 307, HopPaths.uri(other, "/collect").toString()),
                        "password=secret"));
            if (kind == Client.JDK) {
              assertThat(toOther).isEqualTo("307 moved");
            } else {
              assertThat(toOther).startsWith("failed:").contains("at another origin");
            }
            assertThat(other.arrivals()).isEmpty();
            assertThat(
                    outcome(
                        client, post(HopPaths.redirect(origin, 307, "/landed"), "password=secret")))
                .isEqualTo("200 ok /landed");
            assertThat(origin.arrivals())
                .last()
                .satisfies(
                    hop -> {
                      assertThat(hop.request().method()).isEqualTo("POST");
                      assertThat(hop.path()).isEqualTo("/landed");
                      assertThat(HopPaths.body(hop)).isEqualTo("password=secret");
                    });
          }
        });
  }
}
