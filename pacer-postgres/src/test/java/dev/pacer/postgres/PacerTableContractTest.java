package dev.pacer.postgres;

import dev.pacer.Cursor;
import dev.pacer.CursorContract;
import dev.pacer.TimeSource;
import org.junit.jupiter.api.AfterAll;

class PacerTableContractTest extends CursorContract {

  private static final PostgresCursor CURSOR = TestDatabase.cursor(TableLayout.pacerTable());

  /** The server's clock_timestamp() runs on this host's clock. */
  @Override
  protected TimeSource clock() {
    return TimeSource.SYSTEM;
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
