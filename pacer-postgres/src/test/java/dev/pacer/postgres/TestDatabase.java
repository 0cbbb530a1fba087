package dev.pacer.postgres;

import dev.pacer.TimeSource;
import dev.pacer.spi.Cursor;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;

/**
 * One real PostgreSQL (zonky's embedded binaries) for the whole test JVM, started on first use and
 * stopped at JVM exit. Tests isolate themselves by destination name or table name, not by server.
 */
public final class TestDatabase {

  /**
   * How far, on this process's clock, a turn of a cursor that computes on the server's clock may
   * start from where the server's arithmetic puts it, once {@link #settleClock} has run. The cursor
   * maps the one clock onto the other by its kept sample, which errs by at most half that sample's
   * round trip: after settling half of {@link #SETTLED_CALL}, and more only as the drift the
   * mapping allows for (100 us a second) lets a slower sample replace it. Two turns can err
   * opposite ways: 2 x (0.5 ms + 0.1 ms a second), within this for a test of up to 20 s.
   */
  public static final Duration CLOCK_MAPPING = Duration.ofMillis(5);

  /** A reservation call at least as quick as this settles a cursor's clock mapping. */
  static final Duration SETTLED_CALL = Duration.ofMillis(1);

  private static final int SETTLING_CALLS = 100;

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
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
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
    try (Connection c = connect();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** Creates (if missing) a table of the shape of Django's database cache table. */
  public static void createDjangoCacheTable(String table) {
    execute(djangoCacheTableDdl(table));
  }

  /** The statement that creates (if missing) a table of the shape of Django's cache table. */
  public static String djangoCacheTableDdl(String table) {
    return "CREATE TABLE IF NOT EXISTS "
        + table
        + " (cache_key varchar(255) PRIMARY KEY,"
        + " value text NOT NULL, expires timestamptz NOT NULL)";
  }

  /**
   * A cursor on the test database with the given layout and otherwise default settings, connected
   * as an application connects one at start-up ({@link PostgresCursor#connect}): left to its first
   * call, the connection would be opened within that call's 1-s bound, which a loaded machine can
   * exceed (a pause then recorded by this process alone, and a test of what others hear fails). A
   * cursor that cannot connect (a layout whose table is missing) is returned as it is, to try again
   * at its first call, as an application's would.
   */
  public static PostgresCursor cursor(TableLayout layout) {
    PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl()).layout(layout).build());
    cursor.connect(Duration.ofSeconds(30));
    return cursor;
  }

  /**
   * Reserves turns of a destination of its own until a call on {@code time} returns within {@link
   * #SETTLED_CALL}, so that the cursor's mapping of the server's clock onto {@code time} keeps a
   * sample that good: the first statements of a connection, or of a loaded host, can take tens of
   * milliseconds, and a mapping by their sample errs by up to half of that.
   *
   * @throws AssertionError if no call of {@value #SETTLING_CALLS} is that quick
   */
  public static void settleClock(Cursor cursor, TimeSource time) {
    String name = "settle-" + UUID.randomUUID();
    long quickest = Long.MAX_VALUE;
    for (int i = 0; i < SETTLING_CALLS; i++) {
      long called = time.nanoTime();
      cursor.reserve(name, Duration.ZERO);
      long took = time.nanoTime() - called;
      if (took <= SETTLED_CALL.toNanos()) {
        return;
      }
      quickest = Math.min(quickest, took);
    }
    throw new AssertionError(
        "no reservation of "
            + SETTLING_CALLS
            + " returned within "
            + SETTLED_CALL
            + " (quickest "
            + quickest / 1000
            + " us): the clock mapping is unsettled");
  }

  /** A cursor with the given layout, reading {@code time}. */
  public static PostgresCursor cursor(TableLayout layout, TimeSource time) {
    return new PostgresCursor(
        PostgresCursorConfig.forUrl(jdbcUrl()).layout(layout).timeSource(time).build());
  }
}
