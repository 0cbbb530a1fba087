package dev.pacer.postgres;

import dev.pacer.TimeSource;
import dev.pacer.testing.CursorContract;
import dev.pacer.testing.TurnClock;
import java.time.Duration;

/**
 * The cursor contract on a PostgreSQL cursor: its cursor made with {@link #CLOCK}, its turns placed
 * to the mapping of the database's clock onto this one ({@link TestDatabase#CLOCK_MAPPING}), and
 * that mapping settled before each test ({@link TestDatabase#settleClock}).
 */
abstract class DatabaseCursorContract extends CursorContract {

  /** The clock every contract cursor in this module is made with. */
  static final TurnClock CLOCK = new TurnClock(TimeSource.SYSTEM);

  @Override
  protected final TurnClock clock() {
    return CLOCK;
  }

  @Override
  protected final Duration turnTolerance() {
    return TestDatabase.CLOCK_MAPPING;
  }

  @Override
  protected final void settleClock() {
    TestDatabase.settleClock(cursor(), CLOCK);
  }
}
