package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;
import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;

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
  void turnsGivenUpAsLateCountAsDelivered() {
    // 41 turns at 10/s, 5 of them missing: 8.75/s delivered; the 5 given up as late make it 10/s,
    // 2 given up leave 3 turns lost that the limiter answers for (9.25/s, under 9.5).
    FleetBounds bounds = FleetBounds.at(10, "five turns missing");
    Timeline fiveMissing = grid(10, 41, k -> k % 8 != 4);
    assertThat(fiveMissing.size()).isEqualTo(36);
    assertThatThrownBy(() -> bounds.assertDelivered(fiveMissing)).hasMessageContaining("delivered");
    bounds.assertDeliveredBesideGivenUp(fiveMissing, 10, 5);
    assertThatThrownBy(() -> bounds.assertDeliveredBesideGivenUp(fiveMissing, 10, 2))
        .hasMessageContaining("2 turn(s) given up as late");
  }

  @Test
  void membersTurnsGivenUpAsLateCountAsDelivered() {
    // Three members at 1/s, 9 turns each over 8 s, as a degraded host's: one stall that costs two
    // of them a turn breaks the bound (25 of 27, 0.93), and passes when the two turns given up as
    // late are counted; two more lost by the third member are the limiter's, and break it again.
    FleetBounds bounds = FleetBounds.at(1, "three members paced apart");
    List<Timeline> twoLate = new ArrayList<>();
    List<Timeline> fourLost = new ArrayList<>();
    for (int m = 0; m < 3; m++) {
      int member = m;
      twoLate.add(grid(1, 9, k -> member == 2 || k != 4));
      fourLost.add(grid(1, 9, k -> member == 2 ? k != 3 && k != 5 : k != 4));
    }
    assertThatThrownBy(() -> bounds.assertDeliveredByMembers(twoLate))
        .hasMessageContaining("delivered by 3 members together");
    bounds.assertDeliveredByMembers(twoLate, 2);
    assertThatThrownBy(() -> bounds.assertDeliveredByMembers(fourLost, 2))
        .hasMessageContaining("2 turn(s) given up as late");
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
        .as("one turn in ten")
        .hasMessageContaining("given up as late, 8 of 82");
  }

  @Test
  void theTurnsASendersStallsCostAreAllowedAndNoMore() {
    FleetBounds bounds = FleetBounds.at(100, "late turns beside measured stalls");
    // A 150-ms stall at 100/s holds 15 turns; the stalls measured may count more.
    bounds.assertFewLateTurnsBesideStalls(15, 700, 3);
    assertThatThrownBy(() -> bounds.assertFewLateTurnsBesideStalls(16, 700, 3))
        .hasMessageContaining("given up as late, 16 of 700 (at most 15");
    bounds.assertFewLateTurnsBesideStalls(20, 700, 22);
    assertThatThrownBy(() -> bounds.assertFewLateTurnsBesideStalls(23, 700, 22))
        .hasMessageContaining("given up as late, 23 of 700 (at most 22");
    assertThatThrownBy(() -> bounds.assertFewLateTurnsBesideStalls(70, 700, 22))
        .as("one turn in ten")
        .hasMessageContaining("given up as late, 70 of 700");
  }

  @Test
  void theTurnsSendersInProcessesOfTheirOwnSayTheirStallsCostAreAllowedAndNoMore() {
    FleetBounds bounds = FleetBounds.at(10, "late turns of worker processes");
    Timeline run = new Timeline(List.of(0L, 1L));
    // 1 % of 363 is 3; a 150-ms stall at 10/s holds 2 turns; the workers' stalls 7.
    bounds.assertFewLateTurns(7, 363, run, 7);
    assertThatThrownBy(() -> bounds.assertFewLateTurns(8, 363, run, 7))
        .hasMessageContaining("given up as late, 8 of 363 (at most 7");
    assertThatThrownBy(() -> bounds.assertFewLateTurns(4, 363, run, 0))
        .hasMessageContaining("given up as late, 4 of 363 (at most 3");
    // Workers starting cold: each may give up its threads' turns, or what its stalls cost.
    bounds.assertFewLateTurnsOfColdWorkers(11, 300, 3, 4, 1, run, 11);
    assertThatThrownBy(() -> bounds.assertFewLateTurnsOfColdWorkers(12, 300, 3, 4, 1, run, 11))
        .hasMessageContaining("given up as late, 12 of 300 (at most 11");
  }

  @Test
  void workersStartingColdMayEachGiveUpTheirThreadsTurnsAndNoMore() {
    FleetBounds bounds = FleetBounds.at(15, "late turns of cold workers");
    Timeline run = new Timeline(List.of(0L, 1L));
    // A 150-ms stall at 15/s holds 3 turns: 3 workers of 4 threads may give up 3 each at the
    // start, and the rest of the run the 3 of one such stall.
    bounds.assertFewLateTurnsOfColdWorkers(12, 91, 3, 4, run);
    assertThatThrownBy(() -> bounds.assertFewLateTurnsOfColdWorkers(13, 91, 3, 4, run))
        .hasMessageContaining("given up as late, 13 of 91 (at most 12");
    // A worker of 2 threads holds no more than 2 turns at once.
    assertThatThrownBy(() -> bounds.assertFewLateTurnsOfColdWorkers(10, 91, 3, 2, run))
        .hasMessageContaining("given up as late, 10 of 91 (at most 9");
    assertThatThrownBy(() -> bounds.assertFewLateTurnsOfColdWorkers(91, 910, 3, 4, run))
        .as("one turn in ten")
        .hasMessageContaining("given up as late, 91 of 910");
    // Cold again at a return from an outage: each worker's turns once more.
    bounds.assertFewLateTurnsOfColdWorkers(21, 182, 3, 4, 2, run);
    assertThatThrownBy(() -> bounds.assertFewLateTurnsOfColdWorkers(22, 182, 3, 4, 2, run))
        .hasMessageContaining("given up as late, 22 of 182 (at most 21");
  }

  @Test
  void aLongerStallThisJvmMetAllowsItsTurnsAndNoMore() {
    FleetBounds bounds = FleetBounds.at(15, "late turns beside a stall");
    assertThat(bounds.mostLateTurns(91, FleetBounds.STALL_SECONDS)).isEqualTo(3);
    // A 600-ms stall at 15/s holds 9 turns; the share of a long run still rules above it.
    assertThat(bounds.mostLateTurns(91, 0.6)).isEqualTo(9);
    assertThat(bounds.mostLateTurns(2_000, 0.6)).isEqualTo(20);
  }

  @Test
  void theAggregateBoundIsTheGridLessTheLatenessOfACorrectTurn() {
    FleetBounds bounds = FleetBounds.at(2, "figures");
    // 20 arrivals at 2/s span 9.5 s; the first taken up to 250 ms late (half an interval) and
    // stamped up to 30 ms late, they span at least 9.22 s.
    assertThat(bounds.mostAggregate(20)).isCloseTo(19 / 9.22, offset(1e-9));
    assertThat(bounds.mostInAWindow()).isEqualTo(3);
    // A quarter of a 10/s fleet's ceiling paced locally gives up its turns beyond 50 ms late.
    FleetBounds share = FleetBounds.at(2.5, "figures").turnsCheckedAt(10);
    assertThat(share.mostAggregate(25)).isCloseTo(24 / 9.52, offset(1e-9));
  }

  @Test
  void aFirstTurnTakenLateWithinTheRuleHoldsTheAggregateAndOneTurnTooManyBreaksIt() {
    FleetBounds share = FleetBounds.at(2.5, "a share of 10/s paced locally").turnsCheckedAt(10);
    List<Long> lateFirst = new ArrayList<>();
    for (int k = 0; k < 25; k++) {
      lateFirst.add(5 * SECOND + k * 400_000_000L + (k == 0 ? 79_000_000L : 0));
    }
    share.assertHeld(new Timeline(lateFirst));
    // One turn too many: 25 arrivals in the time of 24.
    Timeline oneTooMany = grid(2.5 * 24 / 23, 25, k -> true);
    share.assertAggregateBroke(oneTooMany);
    assertThatThrownBy(() -> share.assertHeld(oneTooMany)).hasMessageContaining("aggregate rate");
  }

  /**
   * A run at 100/s traced from turn to door: turns on a perfect 10-ms grid (or with one turn {@code
   * doubled}), each handed over 0.1 ms after its turn and stamped 0.2 ms after that, but turn 50's
   * request stamped {@code lateMillis} after its hand-over and turn 151's 0.1 ms after (a window is
   * half-open: a request held up by a turn adds one to it, a stamp's jitter across its edge one
   * more).
   */
  private static List<Arrival> tracedRun(TurnTrace trace, boolean doubled, double lateMillis) {
    List<Arrival> arrivals = new ArrayList<>();
    long start = 5 * SECOND;
    for (int k = 0; k < 300; k++) {
      long turn = start + k * 10_000_000L - (doubled && k == 150 ? 10_000_000L : 0);
      long handedOver = turn + 100_000;
      long stamped =
          handedOver + (k == 50 ? Math.round(lateMillis * 1e6) : k == 151 ? 100_000 : 200_000);
      String target = "/run?n=" + k;
      trace.sent(target, turn, handedOver);
      arrivals.add(
          new Arrival(stamped, new Request("GET", target, Map.of(), new byte[0]), false, 200));
    }
    return arrivals;
  }

  @Test
  void aRequestHeldUpAfterItsHandOverIsToldFromTurnsTooClose() {
    FleetBounds bounds = FleetBounds.at(100, "traced at 100/s");
    TurnTrace onTime = new TurnTrace(100);
    List<Arrival> quiet = tracedRun(onTime, false, 0.2);
    Timeline quietRun = Timeline.of(quiet);
    bounds.assertHeld(quietRun, quietRun.after(1), onTime, quiet);

    // Held up 10.5 ms after its hand-over, the request lands beside the next turn's: the window
    // breaks at the door while the turns kept their grid, and the run is reported as skipped.
    TurnTrace heldUp = new TurnTrace(100);
    List<Arrival> late = tracedRun(heldUp, false, 10.5);
    Timeline lateRun = Timeline.of(late);
    assertThat(lateRun.peakOneSecondWindow()).isEqualTo(102);
    assertThatThrownBy(() -> bounds.assertHeld(lateRun, lateRun.after(1), heldUp, late))
        .isInstanceOf(TestAbortedException.class)
        .hasMessageContaining("10.5 ms after it was handed to its client");

    // Two turns on one instant fail whatever else the trace shows.
    TurnTrace doubledTurn = new TurnTrace(100);
    List<Arrival> doubled = tracedRun(doubledTurn, true, 10.5);
    Timeline doubledRun = Timeline.of(doubled);
    assertThatThrownBy(
            () -> bounds.assertHeld(doubledRun, doubledRun.after(1), doubledTurn, doubled))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("the shortest gap between two turns");
  }

  @Test
  void aWindowOverTheBoundWithNoRequestHeldUpAfterItsHandOverFails() {
    // The turns keep their grid on the trace, but the door saw two requests more in a second
    // (sent by something the trace does not follow): nothing excuses it.
    TurnTrace trace = new TurnTrace(100);
    List<Arrival> arrivals = new ArrayList<>(tracedRun(trace, false, 0.2));
    long at = arrivals.get(100).nanos();
    for (int extra = 0; extra < 2; extra++) {
      arrivals.add(
          new Arrival(
              at + 1_000 * (extra + 1),
              new Request("GET", "/run?untraced=" + extra, Map.of(), new byte[0]),
              false,
              200));
    }
    Timeline run = Timeline.of(arrivals);
    FleetBounds bounds = FleetBounds.at(100, "untraced requests");
    assertThatThrownBy(() -> bounds.assertHeld(run, run.after(1), trace, arrivals))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("busiest 1-s window");
  }
}
