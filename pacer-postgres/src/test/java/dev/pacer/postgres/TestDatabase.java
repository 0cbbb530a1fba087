package dev.pacer.postgres;

import dev.pacer.TimeSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * One real PostgreSQL (zonky's embedded binaries) for the whole test JVM, started on first use and
 * stopped at JVM exit. Tests isolate themselves by destination name or table name, not by server.
 */
public final class TestDatabase {

  /**
   * How far a turn a cursor computed on the server's clock may start from where that clock puts
   * it, seen on this process's clock: the error of the cursor's mapping of the one clock onto the
   * other, which its kept sample, the reservation with the shortest round trip, bounds.
   */
  public static final Duration CLOCK_MAPPING = Duration.ofMillis(5);

  private static EmbeddedPostgres postgres;

  private TestDatabase() {}

  public static synchronized EmbeddedPostgres postgres() {
    if (postgres == null) {
      try {
        postgres = EmbeddedPostgres.builder().start();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      EmbeddedPostgres started = postgres;
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          started.close();
        } catch (IOException ignored) {
          // The JVM is exiting; the data directory is a temporary one.
        }
      }));
    }
    return postgres;
  }

  public static String jdbcUrl() {
    return postgres().getJdbcUrl("postgres", "postgres");
  }

  public static int port() {
    return postgres().getPort();
  }

  /** A plain connection for test set-up and inspection, separate from any cursor's. */
  public static Connection connect() throws SQLException {
    return postgres().getPostgresDatabase().getConnection();
  }

  public static void execute(String sql) {
    try (Connection c = connect(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** Creates (if missing) a table of the shape of Django's database cache table. */
  public static void createDjangoCacheTable(String table) {
    execute("CREATE TABLE IF NOT EXISTS " + table + " (cache_key varchar(255) PRIMARY KEY,"
        + " value text NOT NULL, expires timestamptz NOT NULL)");
  }

  /** A cursor on the test database with the given layout and otherwise default settings. */
  public static PostgresCursor cursor(TableLayout layout) {
    return new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl()).layout(layout).build());
  }

  /** A cursor with the given layout, reading {@code time}. */
  public static PostgresCursor cursor(TableLayout layout, TimeSource time) {
    return new PostgresCursor(
        PostgresCursorConfig.forUrl(jdbcUrl()).layout(layout).timeSource(time).build());
  }
}
