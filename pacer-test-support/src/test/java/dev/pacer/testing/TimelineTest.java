package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The one sliding 1-s window: half-open, from each event on. */
class TimelineTest {

  private static final long MS = 1_000_000L;

  @Test
  void aWindowHoldsTheEventsOfTheSecondFromItsFirstButNotTheOneASecondLater() {
    List<Long> sorted = List.of(0L, 400 * MS, 999 * MS, 1_000 * MS, 1_500 * MS);
    assertThat(Timeline.windowEnds(sorted)).containsExactly(3, 4, 5, 5, 5);
    assertThat(new Timeline(sorted).peakOneSecondWindow()).isEqualTo(3);
  }

  @Test
  void theBusiestWindowStartsAtTheFirstEventOfTheEarliestBusiestWindow() {
    Timeline t =
        new Timeline(List.of(5_000 * MS, 0L, 100 * MS, 2_000 * MS, 2_100 * MS, 2_200 * MS));
    assertThat(t.peakOneSecondWindow()).isEqualTo(3);
    assertThat(t.busiestWindowStart()).isEqualTo(2_000 * MS);
    assertThat(new Timeline(List.of(0L, 3_000 * MS)).busiestWindowStart()).isEqualTo(0L);
    assertThat(new Timeline(List.of()).busiestWindowStart()).isEqualTo(0L);
    assertThat(new Timeline(List.of()).peakOneSecondWindow()).isEqualTo(0);
  }
}
