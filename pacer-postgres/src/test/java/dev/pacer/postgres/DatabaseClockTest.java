package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The mapping of the database's turns onto the local clock, on made-up round trips: the database's
 * clock reads {@code local + SKEW}, and each test says when, inside a round trip, it was read.
 */
class DatabaseClockTest {

  private static final long MS = 1_000_000L;
  private static final long SKEW = 1_700_000_000_000L * MS; // database epoch nanos at local 0
  private final DatabaseClock clock = new DatabaseClock();

  /**
   * A round trip from {@code asked} to {@code answered}, the database reading its clock at {@code
   * read}.
   */
  private long waitFromAnswer(long askedMs, long readMs, long answeredMs, long waitMs) {
    return clock.waitFromAnswer(askedMs * MS, answeredMs * MS, SKEW + readMs * MS, waitMs * MS);
  }

  @Test
  void withOneSampleTheTurnIsPlacedAtTheMidpointOfItsRoundTrip() {
    // Read at 2 ms of a 0..10 ms trip; the midpoint guess puts it at 5: the turn at 105 local.
    assertThat(waitFromAnswer(0, 2, 10, 100)).isEqualTo(95 * MS);
  }

  @Test
  void aSlowRoundTripStartsItsTurnOnTimeOnceAQuickOneWasSeen() {
    waitFromAnswer(0, 0, 0, 0); // a quick trip: the offset is exact
    // 60 ms trip, the database read at 1 ms (the rest was the client waiting for a CPU). Sleeping
    // the wait from the answer would start the turn 59 ms late; the mapping starts it on time.
    long wait = waitFromAnswer(1000, 1001, 1060, 143);
    assertThat(1060 * MS + wait).isEqualTo(1144 * MS);
    // Read at 59 ms of the next one: sleeping from the call would start 58 ms early.
    wait = waitFromAnswer(2000, 2059, 2060, 143);
    assertThat(2060 * MS + wait).isEqualTo(2202 * MS);
  }

  @Test
  void aTurnThatBeganBeforeTheAnswerCameBackIsInThePast() {
    waitFromAnswer(0, 0, 0, 0);
    // A 15 ms trip, the database read at 1 ms and the turn was its now: it began 14 ms before the
    // answer, and says so, so that the limiter sees a turn 14 ms late rather than one just begun.
    long wait = waitFromAnswer(1000, 1001, 1015, 0);
    assertThat(wait).isEqualTo(-14 * MS);
    // With only its own trip to go by, a turn of wait 0 is placed at the trip's midpoint.
    assertThat(new DatabaseClock().waitFromAnswer(0, 15 * MS, SKEW, 0)).isEqualTo(-15 * MS / 2);
  }

  @Test
  void aTurnNeverStartsOutsideWhatItsOwnRoundTripProves() {
    waitFromAnswer(0, 0, 0, 0);
    // The database's clock is stepped 1 s back, and this trip's sample is only as good as the
    // kept one would be, yet it contradicts it: taken as a step, at once.
    long wait = waitFromAnswer(1000, 1000 - 1000, 1004, 50);
    assertThat(1004 * MS + wait).isBetween(1050 * MS, 1054 * MS);
    // Whatever the offset says, the turn stays within [asked + wait, answered + wait].
    wait = waitFromAnswer(2000, 2000 - 1000, 2010, 50);
    assertThat(2010 * MS + wait).isBetween(2050 * MS, 2060 * MS);
  }

  @Test
  void aFreshSampleReplacesAnOldOneOnceDriftCouldHaveMovedItMore() {
    waitFromAnswer(0, 0, 0, 0); // exact at local 0
    // 10 s later, a 4 ms trip (±2 ms) whose reading is 0.5 ms ahead of the first sample's: less
    // certain than the kept sample aged 10 s (±1 ms at 100 ppm), so the kept one stays.
    clock.waitFromAnswer(10_000 * MS, 10_004 * MS, SKEW + 10_002 * MS + MS / 2, 0);
    long wait = waitFromAnswer(11_000, 11_010, 11_040, 100);
    assertThat(11_040 * MS + wait).isEqualTo(11_110 * MS);
    // 60 s after the first sample (±6 ms), a 4 ms trip (±2 ms) reading 3 ms ahead is the better
    // one, and from then on turns follow it.
    clock.waitFromAnswer(60_000 * MS, 60_004 * MS, SKEW + 60_005 * MS, 0);
    wait = waitFromAnswer(61_000, 61_010, 61_040, 100);
    assertThat(61_040 * MS + wait).isEqualTo(61_107 * MS);
  }
}
