package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.TimeSource;
import dev.pacer.testing.CursorContract;
import dev.pacer.testing.TurnClock;
import org.junit.jupiter.api.Test;

/**
 * The contract's check that concurrent reservations never share a turn can fail: a cursor that
 * reads its next and writes it back in two statements fails it every time, and the real cursor, one
 * atomic statement, passes it every time, on the same clock and the same tolerance.
 */
class TurnSpacingCheckTest {

  private static final int TRIES = 5;

  @Test
  void aCursorThatReadsThenWritesFailsIt() throws Exception {
    TurnClock clock = new TurnClock(TimeSource.SYSTEM);
    try (ReadThenWriteCursor racy =
        new ReadThenWriteCursor(clock, CursorContract.CONCURRENT_CALLERS)) {
      for (int i = 0; i < TRIES; i++) {
        TestDatabase.settleClock(racy, clock);
        assertThatThrownBy(
                () ->
                    CursorContract.assertConcurrentReservationsNeverShareATurn(
                        racy, clock, TestDatabase.CLOCK_MAPPING))
            .as("try %d", i + 1)
            .isInstanceOf(AssertionError.class)
            .hasMessageContaining("ns from turn");
      }
    }
  }

  @Test
  void thePostgresCursorPassesIt() throws Exception {
    TurnClock clock = new TurnClock(TimeSource.SYSTEM);
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable(), clock)) {
      for (int i = 0; i < TRIES; i++) {
        TestDatabase.settleClock(cursor, clock);
        CursorContract.assertConcurrentReservationsNeverShareATurn(
            cursor, clock, TestDatabase.CLOCK_MAPPING);
      }
    }
  }
}
