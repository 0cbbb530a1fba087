package dev.pacer.postgres;

import dev.pacer.Cursor;
import dev.pacer.CursorContract;
import dev.pacer.TimeSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class KeyValueTableContractTest extends CursorContract {

  private static PostgresCursor cursor;

  @BeforeAll
  static void createDjangoCacheTable() {
    TestDatabase.createDjangoCacheTable("contract_cache");
    cursor = TestDatabase.cursor(TableLayout.djangoCache("contract_cache"));
  }

  /** The server's clock_timestamp() runs on this host's clock. */
  @Override
  protected TimeSource clock() {
    return TimeSource.SYSTEM;
  }

  /** The key/value layout keeps only the cursor: a lockout is announced, not recorded. */
  @Override
  protected boolean recordsLockouts() {
    return false;
  }

  @Override
  protected Cursor cursor() {
    return cursor;
  }

  @AfterAll
  static void close() {
    cursor.close();
  }
}
