package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.LocalCursor;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.FakeTime;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A claim's prepaid turn, as the limiter receives it: on a fake clock, nothing here sleeps. */
class ClaimedTurnsTest {

  private final FakeTime time = new FakeTime();
  private final ClaimedTurns turns = new ClaimedTurns(new LocalCursor(time), time);
  private final Duration interval = Duration.ofMillis(500);

  @Test
  void aPrepaidTurnStartsWhenTheClaimSaid() {
    turns.prepay("a.example", Duration.ofMillis(120), interval, 1);
    time.advance(Duration.ofMillis(20));
    Reservation turn = turns.reserve("a.example", interval, Duration.ZERO);
    assertThat(turn.startsIn()).isEqualTo(Duration.ofMillis(100));
    assertThat(turn.fleetBackoff()).hasValue(1);
  }

  @Test
  void aPrepaidTurnAlreadyBegunSaysHowLongAgoSoThatTheLimiterSeesItLate() {
    turns.prepay("a.example", Duration.ofMillis(10), interval, 1);
    time.advance(Duration.ofMillis(40));
    Reservation turn = turns.reserve("a.example", interval, Duration.ZERO);
    assertThat(turn.startsIn()).isEqualTo(Duration.ofMillis(-30));
    assertThat(turn.waitTime()).isZero();
  }

  @Test
  void anotherHostsReservationGoesToTheSharedCursorAndKeepsThePrepaidTurn() {
    turns.prepay("a.example", Duration.ofMillis(120), interval, 1);
    assertThat(turns.reserve("b.example", interval, Duration.ZERO).startsIn()).isZero();
    assertThat(turns.reserve("a.example", interval, Duration.ZERO).startsIn())
        .isEqualTo(Duration.ofMillis(120));
  }
}
