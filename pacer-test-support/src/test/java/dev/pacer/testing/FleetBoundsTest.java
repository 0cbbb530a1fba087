package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongPredicate;
import org.junit.jupiter.api.Test;

/** Each bound holds a perfect grid at the ceiling and breaks on the fault it is there to catch. */
class FleetBoundsTest {

  private static final long SECOND = 1_000_000_000L;

  /** {@code n} instants {@code 1/rate} apart from an arbitrary start, those {@code kept}. */
  private static Timeline grid(double rate, int n, LongPredicate kept) {
    List<Long> instants = new ArrayList<>();
    long start = 5 * SECOND;
    for (int k = 0; k < n; k++) {
      if (kept.test(k)) {
        instants.add(start + Math.round(k * SECOND / rate));
      }
    }
    return new Timeline(instants);
  }

  @Test
  void aPerfectGridAtTheCeilingHoldsEveryBound() {
    for (double rate : new double[] {2, 4, 7, 20, 100}) {
      Timeline run = grid(rate, (int) (rate * 8), k -> true);
      FleetBounds bounds = FleetBounds.at(rate, "grid at " + rate);
      bounds.assertHeld(run, run.after(1));
      bounds.assertDelivered(run.after(1));
    }
  }

  @Test
  void aQuarterAboveTheCeilingBreaksTheAggregateEvenWhereTheWindowCannotTell() {
    // At 2/s a window may hold 3: 2.5/s shows at most 3 in a window too, so only the aggregate
    // can tell it.
    Timeline fast = grid(2.5, 20, k -> true);
    FleetBounds bounds = FleetBounds.at(2, "2.5/s against 2/s");
    assertThat(fast.peakOneSecondWindow()).isLessThanOrEqualTo(bounds.mostInAWindow());
    bounds.assertAggregateBroke(fast);
    assertThatThrownBy(() -> bounds.assertHeld(fast)).hasMessageContaining("aggregate rate");
  }

  @Test
  void givingUpOneTurnInTenBreaksTheDeliveredRate() {
    Timeline skipping = grid(100, 800, k -> k % 10 != 5);
    FleetBounds bounds = FleetBounds.at(100, "one turn in ten given up");
    bounds.assertHeld(skipping);
    bounds.assertDeliveredBroke(skipping, 100);
    assertThatThrownBy(() -> bounds.assertDelivered(skipping)).hasMessageContaining("delivered");
  }

  @Test
  void membersPacedApartAreJudgedOnTheSumOfTheirRates() {
    // Four members at 1.75/s, each with 11 turns: one of them giving up one turn passes, as it
    // would not alone (10 of 11 turns: 0.9 of the rate); each giving up one turn in ten breaks.
    FleetBounds bounds = FleetBounds.at(1.75, "four members paced apart");
    List<Timeline> oneSkips = new ArrayList<>();
    List<Timeline> allSkip = new ArrayList<>();
    for (int m = 0; m < 4; m++) {
      int member = m;
      oneSkips.add(grid(1.75, 11, k -> member != 0 || k != 5));
      allSkip.add(grid(1.75, 11, k -> k != 5));
    }
    bounds.assertDeliveredByMembers(oneSkips);
    assertThatThrownBy(() -> bounds.assertDelivered(oneSkips.get(0)))
        .hasMessageContaining("delivered");
    assertThatThrownBy(() -> bounds.assertDeliveredByMembers(allSkip))
        .hasMessageContaining("delivered by 4 members together");
  }

  @Test
  void twoTurnsSharedBreakTheBusiestWindow() {
    List<Long> instants = new ArrayList<>(grid(10, 40, k -> true).instantsFrom(0));
    instants.add(instants.get(20) + 1_000_000);
    instants.add(instants.get(21) + 1_000_000);
    Timeline shared = new Timeline(instants);
    FleetBounds bounds = FleetBounds.at(10, "two turns shared");
    bounds.assertWindowBroke(shared);
    assertThatThrownBy(() -> bounds.assertHeld(shared, shared.after(5)))
        .hasMessageContaining("busiest 1-s window");
  }

  @Test
  void lateTurnsAboveOnePercentOrOneStallFail() {
    FleetBounds bounds = FleetBounds.at(20, "late turns");
    bounds.assertFewLateTurns(8, 800);
    assertThatThrownBy(() -> bounds.assertFewLateTurns(9, 800))
        .hasMessageContaining("given up as late, 9 of 800");
    // 1 % of 82 is not one turn; a 150-ms stall at 20/s holds 3.
    bounds.assertFewLateTurns(3, 82);
    assertThatThrownBy(() -> bounds.assertFewLateTurns(4, 82))
        .hasMessageContaining("given up as late, 4 of 82");
    assertThatThrownBy(() -> bounds.assertFewLateTurns(8, 82))
        .as("one turn in ten").hasMessageContaining("given up as late, 8 of 82");
  }

  @Test
  void theAggregateBoundIsTheGridLessTheStampError() {
    FleetBounds bounds = FleetBounds.at(2, "figures");
    // 20 arrivals at 2/s span 9.5 s; stamped up to 30 ms late they span at least 9.47 s.
    assertThat(bounds.mostAggregate(20)).isCloseTo(19 / 9.47, offset(1e-9));
    assertThat(bounds.mostInAWindow()).isEqualTo(3);
  }
}
