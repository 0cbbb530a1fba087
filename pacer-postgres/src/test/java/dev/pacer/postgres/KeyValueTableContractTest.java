package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.BackoffScope;
import dev.pacer.Destination;
import dev.pacer.LimiterRegistry;
import dev.pacer.spi.Cursor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class KeyValueTableContractTest extends DatabaseCursorContract {

  private static PostgresCursor cursor;

  @BeforeAll
  static void createDjangoCacheTable() {
    TestDatabase.createDjangoCacheTable("contract_cache");
    cursor = TestDatabase.cursor(TableLayout.djangoCache("contract_cache"), CLOCK);
  }

  /**
   * The key/value layout keeps only the cursor: a lockout is neither recorded nor announced, and a
   * pause is the cursor itself.
   */
  @Override
  protected boolean recordsHolds() {
    return false;
  }

  @Override
  protected Cursor cursor() {
    return cursor;
  }

  @Test
  void aFleetBackoffIsRefusedWhenItsLimiterIsCreated() {
    Destination fleet =
        Destination.builder("kv-fleet").ratePerSecond(5).backoffScope(BackoffScope.FLEET).build();
    assertThatThrownBy(() -> new LimiterRegistry(cursor).limiter(fleet))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kv-fleet")
        .hasMessageContaining("key/value table layout");
  }

  @AfterAll
  static void close() {
    cursor.close();
  }
}
