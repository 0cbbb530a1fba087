package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.LockedOutException;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.FakeTime;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Each of the three integrations against a real local destination, paced on a fake clock: turns are
 * granted without sleeping, and the sleeps the limiter asked for are the record of the turns taken.
 * The destination allows one request in flight ({@code maxConcurrency(1)}), so a slot not released
 * would leave the next request waiting forever: every test runs under a 20-s bound.
 */
class PerClientTest {

  private static final Duration BOUND = Duration.ofSeconds(20);

  private final FakeTime time = new FakeTime();
  private DoorServer server;
  private DestinationLimiter limiter;
  private LimiterLookup limiters;

  @BeforeEach
  void start() throws Exception {
    server = new DoorServer(HopPaths::answer);
    LimiterRegistry registry = new LimiterRegistry(new LocalCursor(time), time);
    Destination destination =
        Destination.builder("per-client").ratePerSecond(10).maxConcurrency(1).build();
    limiter = registry.limiter(destination);
    limiters =
        LimiterLookup.byHost(
            registry,
            host -> host.equals("127.0.0.1") ? Optional.of(destination) : Optional.empty());
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void eachHopOfARedirectChainTakesItsOwnTurn(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          try (Client.Getter client = kind.open(limiters)) {
            Client.Answer answer = client.get(HopPaths.uri(server, "/hop/3"));
            assertThat(answer).isEqualTo(new Client.Answer(200, "landed"));
            assertThat(HopPaths.paths(server))
                .containsExactly("/hop/3", "/hop/2", "/hop/1", "/hop/0");
            assertThat(time.sleepsMillis())
                .as("a turn per hop, 100 ms apart at 10/s")
                .containsExactly(0L, 100L, 100L, 100L);
            // The last hop's slot was released too: one more request gets its turn.
            assertThat(client.get(HopPaths.uri(server, "/ok/after")).status()).isEqualTo(200);
            assertThat(time.sleepsMillis()).hasSize(5);
          }
        });
  }

  /**
   * Apache's default retry strategy sends a 429 once more after its {@code Retry-After} (sleeping
   * for it in real time); that retry passes through the chain handler and takes its own turn, after
   * the fleet's pause. The JDK's client and OkHttp do not retry a 429.
   */
  @ParameterizedTest
  @EnumSource(Client.class)
  void aRetryAfterReachesTheCallerAsIsAndPausesTheNextTurn(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          try (Client.Getter client = kind.open(limiters)) {
            boolean retried = kind == Client.APACHE;
            assertThat(client.get(HopPaths.uri(server, "/status/429/3")).status()).isEqualTo(429);
            assertThat(HopPaths.paths(server)).hasSize(retried ? 2 : 1);
            assertThat(limiter.backoffMultiplier()).isEqualTo(retried ? 4 : 2);
            assertThat(limiter.pauseLeft()).isEqualTo(Duration.ofSeconds(3));
            int turnsBefore = time.sleepsMillis().size();
            assertThat(client.get(HopPaths.uri(server, "/ok/later")).status()).isEqualTo(200);
            List<Long> sleeps = time.sleepsMillis();
            assertThat(
                    sleeps.subList(turnsBefore, sleeps.size()).stream()
                        .mapToLong(Long::longValue)
                        .sum())
                .as("the next turn waited out the 3-s pause")
                .isGreaterThanOrEqualTo(3000L);
            if (retried) {
              assertThat(sleeps.get(1))
                  .as("the retry's turn came after the pause")
                  .isGreaterThanOrEqualTo(3000L);
            }
            assertThat(limiter.isLockedOut()).isFalse();
          }
        });
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aLockoutReachesTheCallerAsIsAndLaterRequestsAreNotSent(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          try (Client.Getter client = kind.open(limiters)) {
            assertThat(client.get(HopPaths.uri(server, "/status/403")).status()).isEqualTo(403);
            assertThat(limiter.isLockedOut()).isTrue();
            assertThat(limiter.lockoutReason()).contains("HTTP 403 from").contains("/status/403");
            assertThatThrownBy(() -> client.get(HopPaths.uri(server, "/ok/after")))
                .isInstanceOf(LockedOutException.class);
            assertThat(HopPaths.paths(server)).containsExactly("/status/403");
          }
        });
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aHostTheLookupDoesNotPaceGoesThroughWithoutATurn(Client kind) {
    assertTimeoutPreemptively(
        BOUND,
        () -> {
          LimiterLookup nothing = uri -> Optional.empty();
          try (Client.Getter client = kind.open(nothing)) {
            assertThat(client.get(HopPaths.uri(server, "/hop/1")).status()).isEqualTo(200);
            assertThat(HopPaths.paths(server)).containsExactly("/hop/1", "/hop/0");
            assertThat(time.sleepsMillis()).isEmpty();
          }
        });
  }
}
