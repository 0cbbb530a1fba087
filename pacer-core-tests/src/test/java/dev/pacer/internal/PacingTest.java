package dev.pacer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PacingTest {

  private static final long MS = 1_000_000L;
  private static final long INTERVAL = 142_857_143L; // 7 per second

  @Test
  void workedExampleFromTheClassComment() {
    Pacing.Turn first = Pacing.reserve(Pacing.NO_CURSOR, 1000 * MS, INTERVAL);
    assertThat(first.waitNanos()).isZero();
    assertThat(first.newCursor()).isEqualTo(1000 * MS + INTERVAL);

    Pacing.Turn second = Pacing.reserve(first.newCursor(), 1001 * MS, INTERVAL);
    assertThat(second.waitNanos()).isEqualTo(INTERVAL - MS);
    Pacing.Turn third = Pacing.reserve(second.newCursor(), 1002 * MS, INTERVAL);
    assertThat(third.waitNanos()).isEqualTo(2 * INTERVAL - 2 * MS);

    Pacing.Turn afterIdle = Pacing.reserve(third.newCursor(), 2000 * MS, INTERVAL);
    assertThat(afterIdle.waitNanos()).as("idle time is not banked").isZero();
    assertThat(afterIdle.newCursor()).isEqualTo(2000 * MS + INTERVAL);
  }

  @Test
  void refusalLeavesNothingToStoreAndAcceptanceMatchesReserve() {
    long cursor = 1500 * MS;
    assertThat(Pacing.reserveWithin(cursor, 1000 * MS, INTERVAL, 499 * MS)).isNull();
    assertThat(Pacing.reserveWithin(cursor, 1000 * MS, INTERVAL, 500 * MS))
        .isEqualTo(Pacing.reserve(cursor, 1000 * MS, INTERVAL));
  }

  @Test
  void cursorImplausiblyFarAheadIsResetToNow() {
    long hour = 3_600_000 * MS;
    long day = 24 * hour;
    long now = 10 * hour;
    long noPause = Pacing.NO_PAUSE;
    assertThat(Pacing.plausible(now + hour + 1, noPause, now, hour, day))
        .isEqualTo(Pacing.NO_CURSOR);
    Pacing.Turn reset =
        Pacing.reserve(Pacing.plausible(now + hour + 1, noPause, now, hour, day), now, INTERVAL);
    assertThat(reset.waitNanos()).isZero();
    assertThat(reset.newCursor()).isEqualTo(now + INTERVAL);

    Pacing.Turn queued =
        Pacing.reserve(Pacing.plausible(now + hour, noPause, now, hour, day), now, INTERVAL);
    assertThat(queued.waitNanos())
        .as("exactly at the bound is still an honest queue")
        .isEqualTo(hour);
  }

  @Test
  void workedExampleOfAPauseFromTheClassComment() {
    long minute = 60_000 * MS;
    long bound = 2 * minute;
    long day = 1440 * minute;
    long now = 0;
    long pauseEnds = 10 * minute;
    assertThat(Pacing.plausible(11 * minute, pauseEnds, now, bound, day))
        .as("a minute of queue behind the pause")
        .isEqualTo(11 * minute);
    assertThat(Pacing.plausible(13 * minute, pauseEnds, now, bound, day))
        .as("3 min behind it")
        .isEqualTo(Pacing.NO_CURSOR);
    assertThat(Pacing.plausible(13 * minute, Pacing.NO_PAUSE, now, bound, day))
        .as("no pause")
        .isEqualTo(Pacing.NO_CURSOR);
    assertThat(Pacing.plausible(1450 * minute, Long.MAX_VALUE, now, bound, day))
        .as("a pause without end counts as a day's")
        .isEqualTo(Pacing.NO_CURSOR);
    assertThat(Pacing.plausible(1441 * minute, Long.MAX_VALUE, now, bound, day))
        .as("a minute behind a day's pause")
        .isEqualTo(1441 * minute);
    assertThat(Pacing.plausible(5 * minute, -day, now, bound, day))
        .as("a pause that ended long ago explains nothing")
        .isEqualTo(Pacing.NO_CURSOR);
  }
}
