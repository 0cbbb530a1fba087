package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The fleet-wide concurrency cap on a fake clock: slots taken before turns, given back with the
 * slot, polled for while full, and the local share while the store is unavailable. Nothing sleeps.
 */
class FleetCapTest {

  /** So fast that the cursor's waits round to 0 ms: every sleep left is a poll for a slot. */
  private static final double RATE = 1_000_000;

  private final FakeTime time = new FakeTime();
  private final InMemoryFleetSlots slots = new InMemoryFleetSlots();
  private final CountingCursor cursor = new CountingCursor(new LocalCursor(time));

  private DestinationLimiter limiter(Destination.Builder d) {
    return new LimiterRegistry(cursor, slots, time).limiter(d.build());
  }

  private static Destination.Builder capped(int slots, int processes) {
    return Destination.builder("capped")
        .ratePerSecond(RATE)
        .maxConcurrency(16)
        .maxConcurrencyFleetWide(slots)
        .maxFetchingProcesses(processes);
  }

  @Test
  void theLocalShareIsTheSlotsDividedByTheProcessesRoundedDownAtLeastOne() {
    assertThat(FleetCap.localShare(4, 3)).isEqualTo(1);
    assertThat(FleetCap.localShare(10, 3)).isEqualTo(3);
    assertThat(FleetCap.localShare(9, 3)).isEqualTo(3);
    assertThat(FleetCap.localShare(8, 1)).isEqualTo(8);
    assertThat(FleetCap.localShare(2, 4)).isEqualTo(1);
  }

  @Test
  void processesSharingOneStoreHoldAtMostTheCapBetweenThem() throws Exception {
    // Two registries stand for two processes; the store for the fleet's table.
    DestinationLimiter a = limiter(capped(3, 2));
    DestinationLimiter b = new LimiterRegistry(cursor, slots, time).limiter(capped(3, 2).build());
    List<Slot> held = new ArrayList<>(List.of(a.acquire(), b.acquire(), a.acquire()));
    assertThat(slots.held("capped")).isEqualTo(3);
    int reservations = cursor.reservations;

    assertThat(b.tryAcquire(Duration.ofMillis(100))).isEmpty();
    // Polled at 5, 10, 20, 40 ms, then what was left of the 100 ms; no turn was taken meanwhile.
    assertThat(nonZeroSleeps()).containsExactly(5L, 10L, 20L, 40L, 25L);
    assertThat(cursor.reservations)
        .as("turns taken while no slot was free")
        .isEqualTo(reservations);
    assertThat(b.availablePermits()).as("the permit was given back").isEqualTo(15);

    held.remove(0).close();
    assertThat(slots.held("capped")).isEqualTo(2);
    Optional<Slot> next = b.tryAcquire(Duration.ofMillis(100));
    assertThat(next).isPresent();
    next.get().close();
    held.forEach(Slot::close);
    assertThat(slots.held("capped")).isZero();
    assertThat(slots.giveBacks()).isEqualTo(4);
  }

  @Test
  void whileTheStoreIsUnavailableEachProcessKeepsItsLocalShareInFlight() throws Exception {
    slots.setUnavailable(true);
    DestinationLimiter tenOverThree = limiter(capped(10, 3));
    List<Slot> held = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      held.add(tenOverThree.tryAcquire(Duration.ofMillis(1)).orElseThrow());
    }
    assertThat(tenOverThree.tryAcquire(Duration.ofMillis(50)))
        .as("a fourth, over 10 / 3")
        .isEmpty();
    assertThat(nonZeroSleeps()).containsExactly(5L, 10L, 20L, 15L);
    held.remove(0).close();
    assertThat(tenOverThree.tryAcquire(Duration.ofMillis(1))).as("a permit given back").isPresent();
  }

  @Test
  void moreProcessesThanSlotsStillLeaveOneRequestInFlightEach() throws Exception {
    slots.setUnavailable(true);
    DestinationLimiter twoOverFour =
        new LimiterRegistry(cursor, slots, time)
            .limiter(
                Destination.builder("two")
                    .ratePerSecond(RATE)
                    .maxConcurrencyFleetWide(2)
                    .maxFetchingProcesses(4)
                    .build());
    Slot one = twoOverFour.acquire();
    assertThat(twoOverFour.tryAcquire(Duration.ofMillis(10))).isEmpty();
    one.close();
  }

  @Test
  void theStoreBackAgainIsUsedAtTheNextPoll() throws Exception {
    slots.setUnavailable(true);
    DestinationLimiter limiter = limiter(capped(4, 3));
    Slot local = limiter.acquire();
    time.duringNextSleep(() -> slots.setUnavailable(false));
    Slot fleet = limiter.tryAcquire(Duration.ofSeconds(1)).orElseThrow();
    assertThat(nonZeroSleeps()).containsExactly(5L);
    assertThat(slots.held("capped")).isEqualTo(1);
    fleet.close();
    local.close();
    assertThat(slots.held("capped")).isZero();
  }

  @Test
  void anUncappedDestinationNeverAsksTheStore() throws Exception {
    DestinationLimiter uncapped = limiter(Destination.builder("uncapped").ratePerSecond(RATE));
    for (int i = 0; i < 20; i++) {
      uncapped.acquire().close();
    }
    assertThat(slots.takes()).isZero();
    assertThat(slots.giveBacks()).isZero();
  }

  @Test
  void aCappedRequestCostsOneTakeAndOneGiveBack() throws Exception {
    DestinationLimiter limiter = limiter(capped(4, 3));
    for (int i = 0; i < 20; i++) {
      limiter.acquire().close();
    }
    assertThat(slots.takes()).isEqualTo(20);
    assertThat(slots.giveBacks()).isEqualTo(20);
  }

  @Test
  void closingTwiceGivesBackOnce() throws Exception {
    DestinationLimiter limiter = limiter(capped(1, 1));
    Slot slot = limiter.acquire();
    slot.close();
    slot.close();
    assertThat(slots.giveBacks()).isEqualTo(1);
    assertThat(limiter.availablePermits()).isEqualTo(16);
  }

  @Test
  void aTurnRefusedGivesTheSlotBack() throws Exception {
    DestinationLimiter slow =
        new LimiterRegistry(cursor, slots, time)
            .limiter(
                Destination.builder("slow").ratePerSecond(1).maxConcurrencyFleetWide(2).build());
    slow.acquire().close(); // the cursor is now a second ahead
    assertThat(slow.tryAcquire(Duration.ofMillis(10))).isEmpty();
    assertThat(slots.held("slow")).isZero();
  }

  @Test
  void aCappedDestinationNeedsARegistryWithFleetSlots() {
    assertThatThrownBy(() -> new LimiterRegistry(cursor, time).limiter(capped(4, 3).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("capped")
        .hasMessageContaining("FleetSlots");
  }

  @Test
  void theBuilderRefusesACapBelowOne() {
    assertThatThrownBy(() -> Destination.builder("d").maxConcurrencyFleetWide(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxConcurrencyFleetWide must be >= 1, got 0");
  }

  private List<Long> nonZeroSleeps() {
    return time.sleepsMillis().stream().filter(ms -> ms > 0).toList();
  }

  /** Counts reservations, to show that no turn is taken while a slot is awaited. */
  private static final class CountingCursor implements Cursor {
    private final Cursor inner;
    int reservations;

    CountingCursor(Cursor inner) {
      this.inner = inner;
    }

    @Override
    public Reservation reserve(String name, Duration interval, Duration notBefore) {
      reservations++;
      return inner.reserve(name, interval, notBefore);
    }

    @Override
    public Reservation tryReserve(
        String name, Duration interval, Duration notBefore, Duration maxWait) {
      reservations++;
      return inner.tryReserve(name, interval, notBefore, maxWait);
    }

    @Override
    public void clear(String name) {
      inner.clear(name);
    }
  }
}
