package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.testing.FakeTime;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LeasedAheadTest {

  private static final long LEASE_MILLIS = 20_000;

  private final FakeTime time = new FakeTime();

  private static ItemStore.Item item(String token) {
    return new ItemStore.Item("job", "key-" + token, "http://127.0.0.1/" + token, 0, 0, token);
  }

  @Test
  void theCapacityIsTheDividedRateForTheSecondsAskedAtMostTheMost() {
    assertThat(LeasedAhead.capacityFor(20, 10, 4, 10_000)).isEqualTo(50);
    assertThat(LeasedAhead.capacityFor(20, 1, 3, 10_000)).isEqualTo(7);
    assertThat(LeasedAhead.capacityFor(0, 10, 4, 10_000)).isZero();
    assertThat(LeasedAhead.capacityFor(3600, 1_000_000, 2, 10_000)).isEqualTo(10_000);
  }

  /**
   * With 60-s leases, a 20-s buffer and a beat a second, a buffered lease is written again once it
   * has 37 s left: if PostgreSQL goes away just before the beat that would write it, its item is
   * still handed out 20 s into the outage. With leases short beside the buffer every one is
   * written.
   */
  @Test
  void aLeaseLeftUnwrittenStillHandsItsItemOutForTheWholeBuffer() {
    long lease = 60_000;
    long spareAbove = LeasedAhead.spareAboveMillis(lease, 20_000, 1_000);
    assertThat(spareAbove).isEqualTo(37_000);
    LeasedAhead ahead = new LeasedAhead(10, lease, time);
    ahead.toClaim();
    ahead.claimed(List.of(item("a"), item("b")), 3, time.nanoTime());
    // Unwritten until it has spareAbove left, and a beat more: the outage begins then.
    time.advance(Duration.ofMillis(lease - spareAbove + 1_000));
    assertThat(ahead.take()).isPresent();
    time.advance(Duration.ofMillis(20_000 - 1));
    assertThat(ahead.take()).as("the whole buffer's length into the outage").isPresent();

    assertThat(LeasedAhead.spareAboveMillis(20_000, 20_000, 1_000)).isEqualTo(20_000);
    assertThat(LeasedAhead.spareAboveMillis(60_000, 0, 1_000)).isEqualTo(17_000);
  }

  /**
   * A settle of lost leases sees the buffered items and those taken out to fetch since the last
   * settle, each by the token the worker holds it under.
   */
  @Test
  void theHoldingsAreTheBufferedItemsAndThoseTakenSinceTheLastSettle() {
    LeasedAhead ahead = new LeasedAhead(10, LEASE_MILLIS, time);
    ahead.toClaim();
    ahead.claimed(List.of(item("a"), item("b")), 3, time.nanoTime());
    assertThat(ahead.take()).map(ItemStore.Item::token).contains("a");

    Map<String, FrontierStore.Holding> holding = new HashMap<>();
    ahead.holdings(holding);
    assertThat(holding)
        .containsOnly(
            Map.entry("key-a", new FrontierStore.Holding("a", false)),
            Map.entry("key-b", new FrontierStore.Holding("b", true)));

    ahead.forgetTaken();
    holding.clear();
    ahead.holdings(holding);
    assertThat(holding).containsOnly(Map.entry("key-b", new FrontierStore.Holding("b", true)));
  }

  @Test
  void aClaimAsksForItsOwnItemAndFillsTheBufferTwoAtATime() {
    LeasedAhead ahead = new LeasedAhead(3, LEASE_MILLIS, time);
    assertThat(ahead.toClaim()).isEqualTo(3);
    // Two more are being claimed: one more fits.
    assertThat(ahead.toClaim()).isEqualTo(2);
    assertThat(ahead.toClaim()).isEqualTo(1);
    ahead.claimed(List.of(item("a"), item("b"), item("c")), 3, time.nanoTime());
    ahead.claimed(List.of(item("d"), item("e")), 2, time.nanoTime());
    ahead.abandoned(1);
    assertThat(ahead.size()).isEqualTo(5);
    assertThat(ahead.take().map(ItemStore.Item::token)).contains("a");
    assertThat(ahead.take().map(ItemStore.Item::token)).contains("b");
    // Full (three ahead): a thread claims only the item it fetches.
    assertThat(ahead.toClaim()).isEqualTo(1);
  }

  /**
   * Threads fetching a buffered item each wait for their host's turn: the next thread takes an item
   * of the host the fewest threads are on, the first such in the buffer's order, and is counted on
   * it before another thread takes.
   */
  @Test
  void theItemTakenIsOfTheHostTheFewestThreadsAreOn() {
    LeasedAhead ahead = new LeasedAhead(10, LEASE_MILLIS, time);
    ahead.filled(
        List.of(onHost("a1", "a"), onHost("a2", "a"), onHost("b1", "b"), onHost("c1", "c")),
        time.nanoTime());
    java.util.Map<String, Integer> threadsOn = new java.util.HashMap<>();
    List<String> taken = new java.util.ArrayList<>();
    for (int thread = 0; thread < 4; thread++) {
      ahead
          .takeLeast(
              item -> !item.token().equals("c1") || threadsOn.containsKey("b"),
              item -> threadsOn.getOrDefault(host(item), 0),
              item -> threadsOn.merge(host(item), 1, Integer::sum))
          .ifPresent(item -> taken.add(item.token()));
    }
    // c1 is not allowed until a thread is on b; a2 waits until every host has a thread.
    assertThat(taken).containsExactly("a1", "b1", "c1", "a2");
    assertThat(ahead.size()).isZero();
  }

  private static ItemStore.Item onHost(String token, String host) {
    return new ItemStore.Item("job", "key-" + token, "http://" + host + "/" + token, 0, 0, token);
  }

  private static String host(ItemStore.Item item) {
    return java.net.URI.create(item.url()).getHost();
  }

  @Test
  void withNoCapacityAThreadClaimsOnlyItsOwnItem() {
    LeasedAhead ahead = new LeasedAhead(0, LEASE_MILLIS, time);
    assertThat(ahead.toClaim()).isEqualTo(1);
    assertThat(ahead.toClaim()).isEqualTo(1);
  }

  @Test
  void anItemIsHandedOutWhileAQuarterOfItsLeaseIsLeft() {
    LeasedAhead ahead = new LeasedAhead(10, LEASE_MILLIS, time);
    ahead.toClaim();
    ahead.claimed(List.of(item("a"), item("b")), 3, time.nanoTime());
    time.advance(Duration.ofMillis(14_999));
    assertThat(ahead.take().map(ItemStore.Item::token)).contains("a");
    time.advance(Duration.ofMillis(1));
    assertThat(ahead.take()).isEmpty();
    assertThat(ahead.size()).as("kept, for the heartbeat to extend").isEqualTo(1);
    long sent = time.nanoTime();
    ahead.extended(List.of("b"), Set.of("b"), sent);
    time.advance(Duration.ofMillis(14_999));
    assertThat(ahead.take().map(ItemStore.Item::token)).contains("b");
  }

  @Test
  void anItemWhoseLeaseWasNotExtendedIsDropped() {
    LeasedAhead ahead = new LeasedAhead(10, LEASE_MILLIS, time);
    ahead.toClaim();
    ahead.claimed(List.of(item("a"), item("b")), 3, time.nanoTime());
    ahead.extended(List.of("a", "b", "gone"), Set.of("b"), time.nanoTime());
    assertThat(ahead.items()).extracting(ItemStore.Item::token).containsExactly("b");
    assertThat(ahead.drain()).extracting(ItemStore.Item::token).containsExactly("b");
    assertThat(ahead.take()).isEqualTo(Optional.empty());
  }

  /**
   * Per host the heartbeat fills the buffer up to its room, a fill at a time; a thread away from
   * PostgreSQL takes the first item its predicate allows, leaving the others in their order; a
   * claim that leased a buffered item again takes it out, and says so once; a host barred drops its
   * items.
   */
  @Test
  void perHostTheHeartbeatFillsItAndAClaimOrAThreadTakesFromIt() {
    LeasedAhead ahead = new LeasedAhead(4, LEASE_MILLIS, time);
    assertThat(ahead.room(100)).isEqualTo(4);
    assertThat(ahead.room(3)).isEqualTo(3);
    ahead.filled(List.of(item("a"), item("b"), item("c")), time.nanoTime());
    assertThat(ahead.room(100)).isEqualTo(1);
    assertThat(
            ahead
                .takeLeast(i -> !i.token().equals("a"), i -> 0, i -> {})
                .map(ItemStore.Item::token))
        .contains("b");
    assertThat(ahead.claimedAgain("key-a")).isTrue();
    assertThat(ahead.claimedAgain("key-a")).isFalse();
    assertThat(ahead.claimedAgain("key-b")).as("taken by a thread").isFalse();
    ahead.filled(List.of(item("d")), time.nanoTime());
    assertThat(ahead.drop(i -> i.token().equals("d")))
        .extracting(ItemStore.Item::token)
        .containsExactly("d");
    assertThat(ahead.items()).extracting(ItemStore.Item::token).containsExactly("c");
    time.advance(Duration.ofMillis(15_000));
    assertThat(ahead.take()).as("under a quarter of its lease left").isEmpty();
  }

  /**
   * A host's share of the buffer: {@code --outage-buffer} seconds of the host's rate divided by the
   * processes that may fetch, as {@link LeasedAhead#capacityFor} sizes one destination's.
   */
  @Test
  void aHostsShareIsTheOutageBufferAtItsDividedRate() {
    double seconds = PerHostFrontier.perHostSeconds(Duration.ofSeconds(20), 4);
    assertThat(seconds).isEqualTo(5.0);
    assertThat(Math.ceil(seconds * 4)).isEqualTo(LeasedAhead.capacityFor(20, 4, 4, 10_000));
    assertThat(PerHostFrontier.perHostSeconds(Duration.ZERO, 4)).isZero();
  }
}
