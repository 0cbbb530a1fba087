package dev.pacer.cli.db;

import dev.pacer.TimeSource;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.spi.Cursor;
import dev.pacer.testing.TurnClock;
import dev.pacer.testing.TurnContract;
import java.sql.SQLException;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The turn contract on per-host mode's own statements ({@link FrontierTurns}): the per-host claim,
 * which reserves a host's turn in the statement that leases its item, and robots.txt's {@code
 * Crawl-delay} push, on a real PostgreSQL; each turn placed through the database clock as a fetch
 * thread places it, within the mapping's error ({@link TestDatabase#CLOCK_MAPPING}).
 */
class FrontierTurnContractTest extends TurnContract {

  private static final TurnClock CLOCK = new TurnClock(TimeSource.SYSTEM);

  private static FrontierTurns turns;

  @BeforeAll
  static void open() throws SQLException {
    turns = new FrontierTurns(TestDatabase.jdbcUrl(), CLOCK, CONCURRENT_CALLERS);
  }

  @AfterAll
  static void close() {
    turns.close();
  }

  @Override
  protected Cursor cursor() {
    return turns;
  }

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
    TestDatabase.settleClock(turns, CLOCK);
  }
}
