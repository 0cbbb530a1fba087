package dev.pacer.postgres;

import dev.pacer.spi.Cursor;
import org.junit.jupiter.api.AfterAll;

class PacerTableContractTest extends DatabaseCursorContract {

  private static final PostgresCursor CURSOR = TestDatabase.cursor(TableLayout.pacerTable(), CLOCK);

  @Override
  protected Cursor cursor() {
    return CURSOR;
  }

  @AfterAll
  static void close() {
    CURSOR.close();
  }
}
