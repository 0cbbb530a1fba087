package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.Destination;
import dev.pacer.LocalCursor;
import dev.pacer.Slot;
import dev.pacer.ThrottledException;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.testing.Answer;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.FakeTime;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A per-host worker's hosts: held while in use, forgotten a minute after, made again at their next
 * claim. On a fake clock, with the turns the claims prepay, as the worker takes them.
 */
class HostFetchersTest {

  private static final double RATE = 1;

  private final FakeTime time = new FakeTime();
  private final LocalCursor cursor = new LocalCursor(time);
  private final HostFetchers hosts =
      new HostFetchers(settings(), cursor, sent -> {}, new LimiterCounts(), time);

  /**
   * One fetching thread, so a host's limiter has one permit: taking it waits for the request that
   * holds it to give it back.
   */
  private static RunSettings settings() {
    Destination template = Destination.builder("template").ratePerSecond(RATE).build();
    return new RunSettings(
        "run",
        "job",
        template,
        1,
        Path.of("unused"),
        60_000,
        3,
        5,
        1e9,
        Long.MAX_VALUE,
        1 << 20,
        Duration.ofSeconds(10),
        0,
        false,
        0,
        true,
        false,
        false,
        Duration.ofSeconds(30),
        false,
        Optional.empty(),
        Duration.ZERO);
  }

  /** What the worker does with a claim of {@code host} whose turn is now: the turn, taken. */
  private DestinationFetcher claimed(String host) throws InterruptedException {
    DestinationFetcher fetcher = hosts.forHost(host, RATE);
    hosts.turns().prepay(host, Duration.ZERO, fetcher.limiter().destination().interval(), 1);
    fetcher.limiter().acquire().close();
    return fetcher;
  }

  @Test
  void theHostsHeldStayBoundedByTheLastMinutesClaimsOverManyHosts() throws Exception {
    int perSecond = 5;
    List<Integer> held = new ArrayList<>();
    new PerHostDriver(new LocalCursor(time))
        .drive(
            "example",
            2_000,
            perSecond,
            Set.of(500, 1_000, 1_500, 2_000),
            (claimed, fetchers) -> held.add(fetchers));
    // A host's turn leaves its cursor an interval (1 s) on; it goes 60 s after that.
    assertThat(held)
        .as("fetchers held after 500, 1,000, 1,500 and 2,000 hosts, 5 a second")
        .hasSize(4)
        .allSatisfy(n -> assertThat(n).isBetween(60 * perSecond, 61 * perSecond));
  }

  @Test
  void aHostForgottenIsMadeAgainAtItsNextClaimAndReadsItsRowBack() throws Exception {
    claimed("a.example");
    time.advance(HostFetchers.IDLE.plusSeconds(1));
    assertThat(hosts.evictIdle()).isEqualTo(1);
    assertThat(hosts.fetchersHeld()).isZero();

    cursor.pause("a.example", Duration.ofSeconds(30));
    DestinationFetcher again = hosts.forHost("a.example", RATE);
    assertThat(hosts.fetchersHeld()).isOne();
    // A turn not prepaid by a claim (a redirect hop, a turn retaken) reserves on the host's row.
    long asked = time.nanoTime();
    try (Slot slot = again.limiter().acquire()) {
      assertThat(slot.turnNanos() - asked).isEqualTo(Duration.ofSeconds(30).toNanos());
    }
  }

  @Test
  void aHostLockedOutOrWithATurnOutIsKept() throws Exception {
    claimed("locked-out.example").limiter().lockOut("HTTP 403 from https://locked-out.example/");
    DestinationFetcher busy = hosts.forHost("busy.example", RATE);
    Slot out = busy.limiter().acquire();
    time.advance(Duration.ofHours(1));
    assertThat(hosts.evictIdle()).isZero();
    assertThat(hosts.fetchersHeld()).isEqualTo(2);
    out.close();
    time.advance(HostFetchers.IDLE);
    assertThat(hosts.evictIdle()).isOne();
  }

  @Test
  void theRequestsAndThrottledAnswersCountedOutliveTheirHosts() throws Exception {
    try (DoorServer server =
        new DoorServer(request -> Answer.status(request.path().equals("/busy") ? 429 : 200))) {
      URI at = server.uri();
      hosts.forHost("a.example", RATE).fetch(at.resolve("/ok"));
      DestinationFetcher busy = hosts.forHost("b.example", RATE);
      assertThatThrownBy(() -> busy.fetch(at.resolve("/busy")))
          .isInstanceOf(ThrottledException.class);
      // The throttled answer's slot goes back when its discarded body ends, on the client's
      // thread, possibly after fetch() has thrown, and the host's idle time counts from then: the
      // clock moves on once the host's one permit has been taken again (a turn, no request).
      busy.limiter().acquire().close();
      time.advance(Duration.ofMinutes(10));
      assertThat(hosts.evictIdle()).isEqualTo(2);
      assertThat(hosts.fetchersHeld()).isZero();
      hosts.forHost("a.example", RATE).fetch(at.resolve("/ok"));

      assertThat(hosts.requestCount()).isEqualTo(3);
      assertThat(hosts.throttledCount()).isOne();
    }
  }
}
