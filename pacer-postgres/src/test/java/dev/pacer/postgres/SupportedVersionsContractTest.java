package dev.pacer.postgres;

import dev.pacer.spi.Cursor;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Nested;

/**
 * The cursor contract, both layouts, on the oldest and the newest PostgreSQL that Pacer supports
 * (the pom names them). The default test server is a release in between; the key/value layout's
 * arithmetic differs by release ({@code extract} returns double precision up to 13 and numeric from
 * 14), so both ends run the whole suite.
 */
class SupportedVersionsContractTest {

  /** One cursor per nested class, opened by its first test (JUnit makes an instance per test). */
  private static final Map<Class<?>, PostgresCursor> OPENED = new HashMap<>();

  private static TableLayout djangoCache(String release) {
    String table = "contract_cache_" + release.replace('.', '_');
    VersionedDatabase.execute(
        release,
        "CREATE TABLE IF NOT EXISTS "
            + table
            + " (cache_key varchar(255) PRIMARY KEY, value text NOT NULL, expires timestamptz NOT"
            + " NULL)");
    return TableLayout.djangoCache(table);
  }

  @AfterAll
  static void close() {
    OPENED.values().forEach(PostgresCursor::close);
  }

  /** One layout on one release. */
  abstract static class OnRelease extends DatabaseCursorContract {

    abstract String release();

    abstract TableLayout layout();

    @Override
    protected boolean recordsHolds() {
      return layout().recordsLockouts();
    }

    @Override
    protected Cursor cursor() {
      synchronized (OPENED) {
        return OPENED.computeIfAbsent(
            getClass(), c -> VersionedDatabase.cursor(release(), layout(), CLOCK));
      }
    }
  }

  @Nested
  class OldestPacerTable extends OnRelease {
    @Override
    String release() {
      return VersionedDatabase.oldest();
    }

    @Override
    TableLayout layout() {
      return TableLayout.pacerTable();
    }
  }

  @Nested
  class OldestKeyValueTable extends OnRelease {
    @Override
    String release() {
      return VersionedDatabase.oldest();
    }

    @Override
    TableLayout layout() {
      return djangoCache(release());
    }
  }

  @Nested
  class NewestPacerTable extends OnRelease {
    @Override
    String release() {
      return VersionedDatabase.newest();
    }

    @Override
    TableLayout layout() {
      return TableLayout.pacerTable();
    }
  }

  @Nested
  class NewestKeyValueTable extends OnRelease {
    @Override
    String release() {
      return VersionedDatabase.newest();
    }

    @Override
    TableLayout layout() {
      return djangoCache(release());
    }
  }
}
