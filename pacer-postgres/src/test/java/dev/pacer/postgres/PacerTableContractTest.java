package dev.pacer.postgres;

import dev.pacer.Cursor;
import dev.pacer.CursorContract;
import dev.pacer.TimeSource;
import dev.pacer.TurnClock;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;

class PacerTableContractTest extends CursorContract {

  private static final TurnClock CLOCK = new TurnClock(TimeSource.SYSTEM);
  private static final PostgresCursor CURSOR = TestDatabase.cursor(TableLayout.pacerTable(), CLOCK);

  @Override
  protected TurnClock clock() {
    return CLOCK;
  }

  @Override
  protected Duration turnTolerance() {
    return TestDatabase.CLOCK_MAPPING;
  }

  @Override
  protected void settleClock() {
    TestDatabase.settleClock(CURSOR, CLOCK);
  }

  @Override
  protected Cursor cursor() {
    return CURSOR;
  }

  @AfterAll
  static void close() {
    CURSOR.close();
  }
}
