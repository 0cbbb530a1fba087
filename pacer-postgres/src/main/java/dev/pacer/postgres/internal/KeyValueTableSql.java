package dev.pacer.postgres.internal;

/**
 * The SQL of an existing key/value table used as the cursor (a cache table such as Django's): the
 * {@link CursorSql} of that layout. The statement mirrors the pacer table's term by term ({@link
 * CursorSql}'s class comment says how, and where the layouts differ); it lives apart because the
 * user's table can gain no column, so everything the pacer table keeps in columns of its own is
 * read from the value and written back to it.
 */
public final class KeyValueTableSql {

  private KeyValueTableSql() {}

  /**
   * An existing key/value table: the cursor is epoch seconds as decimal text, {@code expires} is
   * pushed to now + 30 days at each reservation.
   *
   * <p>All of the arithmetic is numeric, so that {@code round(numeric, 6)} exists on every
   * supported release: {@code extract} returns numeric from PostgreSQL 14 on, where the cast costs
   * nothing, but double precision up to 13, where {@code round(double precision, int)} does not
   * exist. There the cast keeps float8's 15 significant digits, so {@code now} is read to 10 µs.
   */
  public static CursorSql cursorSql(
      String table, String keyColumn, String valueColumn, String expiresColumn, String keyPrefix) {
    String reserve = reserve(table, keyColumn, valueColumn, expiresColumn);
    String clear = "DELETE FROM " + table + " WHERE " + keyColumn + " = ?";
    String pause = pause(table, keyColumn, valueColumn, expiresColumn);
    return new CursorSql(
        "key/value table "
            + table
            + "("
            + keyColumn
            + ", "
            + valueColumn
            + ", "
            + expiresColumn
            + ") under prefix '"
            + keyPrefix
            + "'",
        null,
        reserve,
        null,
        clear,
        keyPrefix,
        new CursorSql.Holds(null, pause, null, null, null, null),
        null,
        null);
  }

  /** The reservation: the turn taken on the row, read from and written back to its value. */
  private static String reserve(
      String table, String keyColumn, String valueColumn, String expiresColumn) {
    String value = "c." + valueColumn;
    return "WITH p AS MATERIALIZED (\n"
        + "  SELECT ?::text AS key,\n"
        + "         ?::bigint / 1000000.0 AS gap,\n"
        + "         ?::bigint / 1000000.0 AS reset_beyond,\n"
        + "         ?::bigint / 1000000.0 AS max_wait,\n"
        + "         clock.now,\n"
        + "         clock.now + ?::bigint / 1000000.0 AS earliest\n"
        + "  FROM (SELECT extract(epoch FROM clock_timestamp())::numeric AS now) AS clock),\n"
        + "prior AS MATERIALIZED (SELECT "
        + value
        + " AS value FROM "
        + table
        + " c"
        + " WHERE c."
        + keyColumn
        + " = (SELECT p.key FROM p) FOR UPDATE),\n"
        + turn(table, keyColumn, valueColumn, expiresColumn)
        + "SELECT ((turn.value::numeric - p.gap - p.now) * 1000000)::bigint AS wait_micros,\n"
        + "       CASE WHEN prior.value ~ '"
        + CursorSql.DECIMAL_PATTERN
        + "' THEN ((prior.value::numeric - p.now) * 1000000)::bigint END AS"
        + " prior_ahead_micros,\n"
        + "       prior.value IS NOT NULL AS prior_existed,\n"
        + "       (p.now * 1000000)::bigint AS now_micros,\n"
        + "       NULL::text AS lockout_reason,\n"
        + "       NULL::smallint AS fleet_backoff\n"
        + "FROM p LEFT JOIN turn ON true LEFT JOIN prior ON true";
  }

  /** The upsert that takes the turn: the row's value is the cursor, pushed one gap on. */
  private static String turn(
      String table, String keyColumn, String valueColumn, String expiresColumn) {
    String value = "c." + valueColumn;
    String readable = value + " ~ '" + CursorSql.DECIMAL_PATTERN + "'";
    String start =
        "CASE WHEN NOT ("
            + readable
            + ") THEN p.earliest"
            + " WHEN "
            + value
            + "::numeric > p.now + p.reset_beyond THEN p.earliest"
            + " ELSE GREATEST(p.now, "
            + value
            + "::numeric) END";
    return "turn AS (\n"
        + "  INSERT INTO "
        + table
        + " AS c ("
        + keyColumn
        + ", "
        + valueColumn
        + ", "
        + expiresColumn
        + ")\n"
        // Joined, so that the row is locked and read before the upsert looks for it.
        + "  SELECT p.key, round(p.earliest + p.gap, 6)::text,"
        + " clock_timestamp() + interval '30 days' FROM p LEFT JOIN prior ON true\n"
        + "  WHERE "
        + CursorSql.insertWithinMaxWait("EXISTS (SELECT 1 FROM prior)")
        + "\n"
        + "  ON CONFLICT ("
        + keyColumn
        + ") DO UPDATE\n"
        + "    SET "
        + valueColumn
        + " = (SELECT round("
        + start
        + " + p.gap, 6)::text FROM p),\n"
        + "        "
        + expiresColumn
        + " = EXCLUDED."
        + expiresColumn
        + "\n"
        + "    WHERE (SELECT p.max_wait IS NULL OR "
        + start
        + " <= p.now + p.max_wait FROM p)\n"
        + "  RETURNING "
        + value
        + " AS value)\n";
  }

  /** The pause is the cursor itself, as a Python fleet on the same rows reads it. */
  private static String pause(
      String table, String keyColumn, String valueColumn, String expiresColumn) {
    String value = "c." + valueColumn;
    String readable = value + " ~ '" + CursorSql.DECIMAL_PATTERN + "'";
    return "WITH p AS MATERIALIZED (\n"
        + "  SELECT ?::text AS key, clock.now, ?::bigint / 1000000.0 AS delay\n"
        + "  FROM (SELECT extract(epoch FROM clock_timestamp())::numeric AS now) AS clock),\n"
        + "held AS (\n"
        + "  INSERT INTO "
        + table
        + " AS c ("
        + keyColumn
        + ", "
        + valueColumn
        + ", "
        + expiresColumn
        + ")\n"
        + "  SELECT p.key, round(p.now + p.delay, 6)::text,"
        + " clock_timestamp() + interval '30 days' FROM p\n"
        + "  ON CONFLICT ("
        + keyColumn
        + ") DO UPDATE\n"
        + "    SET "
        + valueColumn
        + " = (SELECT round(GREATEST(CASE WHEN "
        + readable
        + " THEN "
        + value
        + "::numeric ELSE 0 END, p.now + p.delay), 6)::text FROM p),\n"
        + "        "
        + expiresColumn
        + " = EXCLUDED."
        + expiresColumn
        + "\n"
        + "  RETURNING 1)\n"
        + "SELECT 1 FROM held";
  }
}
