package dev.pacer.postgres;

import dev.pacer.BackoffScope;
import dev.pacer.postgres.internal.CursorSql;
import dev.pacer.postgres.internal.SqlIdentifiers;

/**
 * The SQL of Pacer's own cursor table ({@link TableLayout#pacerTable(String)}) for a program that
 * takes a destination's turn inside a statement of its own. {@code pacer fetch --per-host} is one:
 * its claim reserves the turn of an item's host and leases the item in one statement, on the very
 * row a {@link PostgresCursor} paces that host on.
 *
 * <p>The expressions are the ones the library's reservation is built from, so a statement composed
 * of them spaces turns, resets an implausible cursor and counts the fleet's backoff exactly as the
 * library does on the same row. An expression names its inputs by alias:
 *
 * <ul>
 *   <li>{@code row}: the cursor's row as the statement's upsert locked it (its columns {@code
 *       next_at}, {@code paused_until});
 *   <li>{@code ask}: the reservation's terms, with the columns {@code now} (the database's {@code
 *       clock_timestamp()}, read once), {@code reset_beyond} (the reset bound, an interval) and
 *       {@code earliest} (where the turn starts if the row is missing or reset).
 * </ul>
 *
 * A table name is checked as {@link TableLayout} checks it, before any SQL is made; the aliases are
 * the caller's own SQL and are not checked.
 */
public final class PacerTableSql {

  private PacerTableSql() {}

  /**
   * The DDL that makes Pacer's table and its lockouts' table beside it ({@code <table>_lockout}) if
   * they are missing, and adds a column an older release's table lacks: what a {@link
   * PostgresCursor} on this table runs before its first reservation. A statement that reserves on
   * the table itself must run it first.
   *
   * @param table the table's name, optionally schema-qualified
   * @return the statements, separated by semicolons
   * @throws IllegalArgumentException naming the table if it is not an identifier
   */
  public static String createTable(String table) {
    return CursorSql.pacerTable(SqlIdentifiers.qualifiedName("table", table)).createTable();
  }

  /**
   * Where a granted turn starts: at the later of {@code ask.now} and the cursor, unless the reset
   * bound takes the cursor for a corrupt one (further ahead of now, and of the end of its pause,
   * than {@code ask.reset_beyond}), when it starts at {@code ask.earliest}.
   *
   * @param row the alias of the cursor's row
   * @param ask the alias of the reservation's terms
   * @return a timestamptz expression
   */
  public static String turnStart(String row, String ask) {
    return CursorSql.pacerTurnStart(row, ask);
  }

  /**
   * The cursor after a turn granted: where {@link #turnStart} starts it, plus {@code spacing}. That
   * is the pacing rule, {@code next = max(now, next) + interval}, with the reset bound's exception.
   *
   * @param row the alias of the cursor's row
   * @param ask the alias of the reservation's terms
   * @param spacing an interval expression: the turn's gap (times the fleet's multiplier, if the
   *     statement keeps it)
   * @return a timestamptz expression
   */
  public static String nextAt(String row, String ask, String spacing) {
    return CursorSql.pacerNextAt(row, ask, spacing);
  }

  /**
   * Whether the turn {@link #turnStart} places starts within {@code bound} of {@code ask.now}: the
   * condition of an upsert's {@code ON CONFLICT … WHERE} that refuses a later turn, leaving the row
   * exactly as it was.
   *
   * @param row the alias of the cursor's row
   * @param ask the alias of the reservation's terms
   * @param bound an interval expression
   * @return a boolean expression
   */
  public static String startsWithin(String row, String ask, String bound) {
    return CursorSql.pacerStartsWithin(row, ask, bound);
  }

  /**
   * The cursor held back to {@code until} at least, as a pause holds it: turns already queued
   * beyond it keep their places, and the first turn after it starts no sooner.
   *
   * @param row the alias of the cursor's row
   * @param until a timestamptz expression
   * @return a timestamptz expression
   */
  public static String heldUntil(String row, String until) {
    return CursorSql.pacerHeldUntil(row, until);
  }

  /**
   * What a reservation writes into the row's {@code reset_from}: the cursor it found, where {@link
   * #turnStart} resets it; NULL where it does not. Returned by the statement, it lets the reset be
   * logged with the value actually overwritten.
   *
   * @param row the alias of the cursor's row
   * @param ask the alias of the reservation's terms
   * @return a timestamptz expression
   */
  public static String resetFrom(String row, String ask) {
    return CursorSql.pacerResetFrom(row, ask);
  }

  /**
   * Seconds from {@code now} to {@code timestamp}, negative for an instant before it, for any
   * timestamp ({@code 'infinity'} included: counted no further than a century either way); NULL for
   * a NULL timestamp.
   *
   * @param now an expression of the instant to count from
   * @param timestamp an expression of the instant to count to
   * @return a numeric expression
   */
  public static String secondsFrom(String now, String timestamp) {
    return CursorSql.secondsFrom(now, timestamp);
  }

  /**
   * The statement that counts clean answers, heard with turns a caller's own statement reserved, on
   * their destinations' rows, under the rule the library's reservation under the fleet's backoff
   * counts them by: at {@value BackoffScope#CLEAN_ANSWERS_TO_HALVE} since the last rate-pressure
   * answer the multiplier halves and the count starts again. Only rows backed off are touched.
   * Parameters: the names (text[]) and their clean answers (integer[]), in the same order.
   *
   * @param table the table's name, optionally schema-qualified
   * @return the statement; its update count is the rows touched
   * @throws IllegalArgumentException naming the table if it is not an identifier
   */
  public static String countCleanAnswers(String table) {
    String halves = "k.clean + u.n >= " + BackoffScope.CLEAN_ANSWERS_TO_HALVE;
    return "UPDATE "
        + SqlIdentifiers.qualifiedName("table", table)
        + " k SET"
        + " backoff = CASE WHEN "
        + halves
        + " THEN GREATEST(1, k.backoff / 2) ELSE k.backoff END,"
        + " clean = CASE WHEN "
        + halves
        + " THEN 0 ELSE k.clean + u.n END"
        + " FROM unnest(?::text[], ?::integer[]) AS u(name, n)"
        + " WHERE k.name = u.name AND k.backoff > 1";
  }
}
