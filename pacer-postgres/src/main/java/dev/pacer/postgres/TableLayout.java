package dev.pacer.postgres;

import dev.pacer.postgres.internal.CursorSql;
import dev.pacer.postgres.internal.KeyValueTableSql;
import dev.pacer.postgres.internal.SqlIdentifiers;

/**
 * Where the cursors are stored. Two layouts:
 *
 * <ol>
 *   <li>{@link #pacerTable(String)} (the default, {@code pacer_cursor}): Pacer's own table, created
 *       on first use:
 *       <pre>
 * CREATE UNLOGGED TABLE IF NOT EXISTS pacer_cursor (
 *   name         text        PRIMARY KEY,         -- the destination name
 *   next_at      timestamptz NOT NULL,            -- the cursor: earliest start of the next turn
 *   updated_at   timestamptz NOT NULL,            -- database clock at the last reservation
 *   paused_until timestamptz,                     -- end of the last Retry-After pause
 *   backoff      smallint    NOT NULL DEFAULT 1,  -- the fleet's backoff multiplier
 *   clean        integer     NOT NULL DEFAULT 0,  -- clean answers since the last rate pressure
 *   reset_from   timestamptz,                     -- the cursor the last reservation reset, if any
 *   lockout      text,                            -- the lockout's reason, as the record beside
 *   lockout_read boolean     NOT NULL DEFAULT false -- whether that record was read for this row
 * )</pre>
 *       UNLOGGED because a cursor is worth nothing after a crash: PostgreSQL truncates unlogged
 *       tables on crash recovery (and a standby has them empty); the next reservation re-inserts
 *       the row no earlier than the turns the fleet may still hold, so the destination sees no turn
 *       beyond the ceiling for it, and what the fleet loses is the outage's turns, as it would with
 *       a logged table. In exchange every reservation saves a WAL write. Beside it {@code
 *       <table>_lockout} (logged) keeps lockouts, which every lockout also writes on the cursor
 *       row, so that a reservation reads the logged table only for a row that is new (after a crash
 *       emptied the table, say) or has not been checked against it; and {@code <table>_fetcher}
 *       (unlogged, made by the first census) the census of the processes taking turns, which a
 *       degraded limiter divides its ceiling by when they outnumber {@code maxFetchingProcesses}.
 *   <li>{@link #keyValueTable} / {@link #djangoCache(String)}: an existing key/value table with no
 *       schema change, the shape of Django's database cache table ({@code cache_key varchar(255)
 *       PRIMARY KEY, value text NOT NULL, expires timestamptz NOT NULL}). The cursor is epoch
 *       seconds as plain decimal text under {@code <prefix><destination name>} (prefix {@code
 *       harvest-rate-cursor:} by default) and {@code expires} is set to now + 30 days, so a Java
 *       fleet and a Python fleet writing the same table share one ceiling.
 * </ol>
 *
 * <p>Table and column names cannot be SQL parameters; they must match {@code
 * ^[A-Za-z_][A-Za-z0-9_]*$}, optionally schema-qualified, and anything else is refused before any
 * SQL runs.
 */
public final class TableLayout {

  /** The key prefix of the original design's rows in a shared cache table. */
  public static final String DEFAULT_KEY_PREFIX = "harvest-rate-cursor:";

  private final CursorSql sql;

  private TableLayout(CursorSql sql) {
    this.sql = sql;
  }

  /**
   * Pacer's own (unlogged) table, created on first use.
   *
   * @param table the table's name, optionally schema-qualified
   * @return the layout
   * @throws IllegalArgumentException naming the table if it is not an identifier
   */
  public static TableLayout pacerTable(String table) {
    return new TableLayout(CursorSql.pacerTable(SqlIdentifiers.qualifiedName("table", table)));
  }

  /**
   * The default: Pacer's own table {@code pacer_cursor}.
   *
   * @return the layout
   */
  public static TableLayout pacerTable() {
    return pacerTable("pacer_cursor");
  }

  /**
   * A Django-style database cache table ({@code cache_key}, {@code value}, {@code expires}).
   *
   * @param table the table's name, optionally schema-qualified
   * @return the layout, with the key prefix {@value #DEFAULT_KEY_PREFIX}
   * @throws IllegalArgumentException naming the table if it is not an identifier
   */
  public static TableLayout djangoCache(String table) {
    return keyValueTable(table, "cache_key", "value", "expires", DEFAULT_KEY_PREFIX);
  }

  /**
   * Any existing key/value table with a text key, a text value and a timestamptz expiry.
   *
   * @param table the table's name, optionally schema-qualified
   * @param keyColumn the text key's column
   * @param valueColumn the text value's column
   * @param expiresColumn the timestamptz expiry's column
   * @param keyPrefix put before the destination's name to make its key
   * @return the layout
   * @throws IllegalArgumentException naming the value if a name is not an identifier or the prefix
   *     is null
   */
  public static TableLayout keyValueTable(
      String table, String keyColumn, String valueColumn, String expiresColumn, String keyPrefix) {
    if (keyPrefix == null) {
      throw new IllegalArgumentException("keyPrefix must not be null");
    }
    return new TableLayout(
        KeyValueTableSql.cursorSql(
            SqlIdentifiers.qualifiedName("table", table),
            SqlIdentifiers.name("keyColumn", keyColumn),
            SqlIdentifiers.name("valueColumn", valueColumn),
            SqlIdentifiers.name("expiresColumn", expiresColumn),
            keyPrefix));
  }

  /**
   * The statement of a plain reservation on this layout, with JDBC {@code ?} parameters in order:
   * key (text), gap, reset_beyond, max_wait, not_before (bigint microseconds; max_wait NULL for an
   * unconditional reservation). For tools that run exactly Pacer's statement outside it, such as
   * the benchmark's {@code pgbench} script. In Pacer's table layout it is the reservation on a row
   * that exists and is known not to be locked out, which updates nothing (and returns no row) on
   * any other; the cursor then makes a fuller statement that reads the lockouts' table (the class
   * comment of {@code CursorSql} says how). (A destination under the fleet's backoff uses a variant
   * of its own.)
   *
   * @return the statement
   */
  public String reservationSql() {
    return sql.reserveOnRow() != null ? sql.reserveOnRow() : sql.reserve();
  }

  /**
   * Whether a lockout is recorded for processes started later: in Pacer's table layout, in a logged
   * table beside the cursors ({@code <table>_lockout}), and announced. The key/value layout keeps
   * only the cursor, and announces nothing: there each process meets the lockout itself.
   *
   * @return whether a lockout outlives the processes that heard it
   */
  public boolean recordsLockouts() {
    return sql.holds().recordsLockouts();
  }

  CursorSql sql() {
    return sql;
  }

  @Override
  public String toString() {
    return sql.toString();
  }
}
