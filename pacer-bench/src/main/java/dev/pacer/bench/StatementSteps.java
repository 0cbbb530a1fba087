package dev.pacer.bench;

import dev.pacer.postgres.TableLayout;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.List;

/**
 * Pacer's reservation statement as it stood before each step that made it cheaper, kept here, and
 * only here, so that one latency run times every step side by side with the statement now, on the
 * same connection and call by call ({@link Latency}). No user's code runs these texts: they are the
 * benchmark's record of what each step saved. Each is timed raw, as a server-side prepared
 * statement with a plain reservation's parameters (gap 0, no max_wait, not_before 0) on a key of
 * its own, so that the client's work is left out; the cursor's own reservation is timed beside
 * them.
 */
final class StatementSteps {

  /** One hour, the cursor's default reset bound, in microseconds. */
  static final long RESET_BEYOND_MICROS = 3_600_000_000L;

  /** A statement to time, and how to bind a plain reservation of {@code key} to it. */
  record Step(String label, String sql, Binder binder) {}

  /** Binds a plain reservation's parameters. */
  @FunctionalInterface
  interface Binder {
    void bind(PreparedStatement statement, String key) throws SQLException;
  }

  /**
   * The upsert that probed the logged lockout table in every reservation and returned six columns:
   * parameters key, gap, reset_beyond, max_wait, not_before.
   */
  static final String UPSERT_PROBING_LOCKOUTS = step("1-upsert-probing-lockouts.sql");

  /**
   * The update of the row alone, the lockout read from the row (the logged table only for a row
   * that is new or unchecked), still returning the upsert's six columns.
   */
  static final String UPDATE_SIX_COLUMNS = step("2-update-six-columns.sql");

  /**
   * The same update returning only the three columns the cursor read of it: the wait, the reset
   * cursor's distance and the database's now; now read by {@code clock_timestamp()} in a subquery
   * joined to the row, and the reset decided in the update.
   */
  static final String UPDATE_THREE_COLUMNS = step("3-update-three-columns.sql");

  private StatementSteps() {}

  /** A step's text, from this package's resources ({@code steps/<file>}). */
  private static String step(String file) {
    try (InputStream in = StatementSteps.class.getResourceAsStream("steps/" + file)) {
      if (in == null) {
        throw new IllegalStateException("missing resource steps/" + file);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every step, oldest first, the statement now last. */
  static List<Step> all() {
    return List.of(
        new Step(
            "upsert probing the lockout table, six columns (before)",
            UPSERT_PROBING_LOCKOUTS,
            StatementSteps::bindFive),
        new Step(
            "update of the row, lockout from the row, six columns",
            UPDATE_SIX_COLUMNS,
            StatementSteps::bindFive),
        new Step(
            "update of the row, three columns", UPDATE_THREE_COLUMNS, StatementSteps::bindFive),
        new Step(
            "update of the row, statement_timestamp(), no join, resets left to the full"
                + " statement, two columns (now)",
            TableLayout.pacerTable(Contender.PACER_TABLE).reservationSql(),
            StatementSteps::bindFive));
  }

  /** key, gap 0, reset_beyond, max_wait NULL, not_before 0. */
  private static void bindFive(PreparedStatement s, String key) throws SQLException {
    s.setString(1, key);
    s.setLong(2, 0);
    s.setLong(3, RESET_BEYOND_MICROS);
    s.setNull(4, Types.BIGINT);
    s.setLong(5, 0);
  }
}
