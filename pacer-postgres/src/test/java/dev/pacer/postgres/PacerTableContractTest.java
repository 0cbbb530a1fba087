package dev.pacer.postgres;

import dev.pacer.Cursor;
import dev.pacer.CursorContract;
import org.junit.jupiter.api.AfterAll;

class PacerTableContractTest extends CursorContract {

  private static final PostgresCursor CURSOR = TestDatabase.cursor(TableLayout.pacerTable());

  @Override
  protected Cursor cursor() {
    return CURSOR;
  }

  @AfterAll
  static void close() {
    CURSOR.close();
  }
}
