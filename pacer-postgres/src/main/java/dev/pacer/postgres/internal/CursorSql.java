package dev.pacer.postgres.internal;

import dev.pacer.BackoffScope;
import dev.pacer.Destination;
import java.util.Locale;

/**
 * The SQL of one table layout, built once from validated identifiers.
 *
 * <p>A reservation is a single statement, {@code INSERT … ON CONFLICT DO UPDATE … RETURNING}, that
 * applies {@code next = max(now, next) + gap} to the destination's row under the row lock that ON
 * CONFLICT takes for the statement's duration: atomic against every process and thread, with no
 * advisory lock, no explicit transaction and no second round trip. {@code now} is the database's
 * {@code clock_timestamp()}, read once per statement. The statement mirrors {@code
 * dev.pacer.internal.Pacing} term by term:
 *
 * <ul>
 *   <li>{@code earliest = now + not_before}: where the caller knows the turns already granted end;
 *       it is used only when the row was lost or must be reset;
 *   <li>no row: the turn starts at {@code earliest}, and {@code earliest + gap} is inserted;
 *   <li>a value further ahead than {@code reset_beyond} of both now and the end of the pause
 *       recorded with it ({@code paused_until}, counted no further ahead of now than {@code
 *       Destination.LONGEST_RETRY_AFTER}), or (text layout) one that is not a decimal number: the
 *       turn starts at {@code earliest}, overwriting it. That is {@code Pacing.plausible}'s {@code
 *       max(now, min(paused_until, now + longest))}, written as two comparisons so that the pause's
 *       is evaluated only for a value already beyond {@code now + reset_beyond}: a row within the
 *       bound pays nothing for it. The key/value layout records no pause: its bound counts from
 *       now, and a pause longer than the bound is reset;
 *   <li>otherwise the turn starts at {@code GREATEST(now, cursor)};
 *   <li>with a {@code max_wait}, a turn starting later than {@code now + max_wait} is refused by
 *       the ON CONFLICT's WHERE: the row is not updated and the statement returns no row.
 * </ul>
 *
 * <p>Pacer's table also keeps lockouts, in a logged table beside it ({@code <table>_lockout}): a
 * destination with a row there gets no turn, and the statement still returns its one row, with a
 * NULL wait and the lockout's reason. Every lockout is written on the cursor row as well ({@code
 * lockout}, cleared with the record), and the full statement marks a row it reserved on as checked
 * against the record ({@code lockout_read}). So a plain reservation first tries {@link
 * #reserveOnRow}, an update of a checked, unlocked row that reads nothing else, and makes this
 * statement only when that updates nothing: the logged table is read only for a row that is new
 * (the unlogged table loses its rows in a crash; the record does not), unchecked or locked out. A
 * pause ({@code Retry-After}) needs no check of its own: it moves the cursor itself, and records
 * its end, which only the reset bound reads.
 *
 * <p>Under the fleet's backoff (Pacer's table only, a variant of the statement of its own: see
 * {@link FleetBackoff}) the row also keeps the backoff multiplier and the clean answers counted
 * since the last rate-pressure answer: the turn is spaced by {@code gap × multiplier}, the caller's
 * clean answers are added, and at 100 the multiplier halves, all under the same row lock.
 *
 * <p>Parameters, in order: key (text), gap, reset_beyond, max_wait, not_before (bigint
 * microseconds; max_wait NULL for an unconditional reservation). Result columns: {@code
 * wait_micros} (NULL when refused or locked out), {@code prior_ahead_micros} (how far the previous
 * value was ahead of now; NULL if there was no row or it was unreadable), {@code prior_existed},
 * {@code now_micros}, {@code lockout_reason} and {@code fleet_backoff} (the multiplier that spaced
 * the turn; NULL outside the fleet's backoff). The prior value is returned only so that resets and
 * repairs can be logged, and it must be the value the upsert found under the row lock, not the one
 * in the statement's snapshot: another role's write that commits while the statement waits for the
 * row is invisible to the snapshot, and the upsert resets it all the same. Pacer's table, whose
 * value is always readable, reports only a reset: the upsert keeps the value it overwrote in {@code
 * reset_from} (NULL when it did not reset), and returns it, since RETURNING sees only the row
 * written (PostgreSQL 18's {@code RETURNING old} is out of reach of the releases supported);
 * otherwise {@code prior_ahead_micros} is NULL and {@code prior_existed} false. The key/value
 * layout cannot add a column to its table: it reads the value always, {@code FOR UPDATE}, before
 * the upsert (a {@code prior} CTE that the upsert's own source joins, so that it runs first; it
 * compares the key with a scalar subquery, a plan parameter, rather than joining {@code p}, so that
 * the primary key's index can answer it: a join condition would leave it a filter over a whole scan
 * of the table). Locked, the read waits for the other role's write as the upsert would have, and
 * holds what the upsert then finds.
 *
 * <p>Pacer's table's statements are kept lean, because they are the reservation's whole server cost
 * (measured per variant and per step in docs/benchmarks.md). In the full statement the lockout
 * probe is a column of {@code p}, read once; the ON CONFLICT branch reads {@code p} in one
 * sub-select for all the columns it sets and one for its WHERE; the cursor table is read only for
 * the max_wait edge ({@link #insertWithinMaxWait}), when a try-reservation's {@code earliest} lies
 * beyond its max_wait.
 */
public final class CursorSql {

  private static final int CLEAN_ANSWERS_TO_HALVE = BackoffScope.CLEAN_ANSWERS_TO_HALVE;
  private static final int MAX_BACKOFF = BackoffScope.MAX_MULTIPLIER;
  private static final long LONGEST_PAUSE_MICROS = Destination.LONGEST_RETRY_AFTER.toNanos() / 1000;

  /** Plain decimal, as PostgreSQL's numeric and Python's float print epoch seconds. */
  static final String DECIMAL_PATTERN =
      "^\\s*[+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]{1,3})?\\s*$";

  /**
   * A missing row is inserted at {@code earliest}, which may lie beyond a try-reservation's
   * max_wait; then nothing is inserted and the reservation is refused. (When the row exists the ON
   * CONFLICT branch decides, and the INSERT's own row never matters.) {@code rowExists} reads the
   * statement's snapshot; it runs only in that case, after the cheap tests have failed.
   */
  static String insertWithinMaxWait(String rowExists) {
    return "(p.max_wait IS NULL OR p.earliest <= p.now + p.max_wait OR " + rowExists + ")";
  }

  private final String description;
  private final String createTable;
  private final String reserve;
  private final String reserveOnRow;
  private final String clear;
  private final String keyPrefix;
  private final Holds holds;
  private final FleetBackoff fleetBackoff;
  private final Census census;

  /**
   * The census of the processes taking turns of each destination: its table's DDL and its
   * statement, which stamps this process against every key it names and answers, per key, the
   * processes that stamped it within the window.
   */
  public record Census(String createTable, String statement) {}

  /**
   * The statements of the fleet's backoff ({@code BackoffScope.FLEET}): the reservation under it
   * (the plain reservation's parameters, then clean: integer, clean answers since the caller's last
   * reservation), and the rate-pressure answer that doubles it (parameter: key; returns the new
   * multiplier).
   */
  public record FleetBackoff(String reserve, String throttled) {}

  /**
   * The statements of a destination's holds: a pause ({@code Retry-After}) and a lockout, and the
   * notification channel every process listens on. Parameters: pause (key, delay micros, then
   * channel where there is one), lockOut (key, reason, channel), clearLockout (key), read (key,
   * key): the pause's micros left (NULL if none) and the lockout's reason (NULL if none); readAll
   * (keys, text[]): the same of every key named that is paused or locked out, one row each (key,
   * pause micros, reason), in one statement, for a listener that hears no notification.
   *
   * <p>A notification is only a wake-up (it says which destination to read again; any role that can
   * connect can send one), so a layout that records its holds nowhere but the cursor has nothing to
   * announce: the key/value layout's channel, lockOut, clearLockout and read are null. Its pause is
   * the cursor itself, which every later turn of every process honours.
   */
  public record Holds(
      String channel,
      String pause,
      String lockOut,
      String clearLockout,
      String read,
      String readAll) {

    /** Whether the layout records lockouts and announces holds; false for the key/value layout. */
    public boolean recordsLockouts() {
      return lockOut != null;
    }
  }

  CursorSql(
      String description,
      String createTable,
      String reserve,
      String reserveOnRow,
      String clear,
      String keyPrefix,
      Holds holds,
      FleetBackoff fleetBackoff,
      Census census) {
    this.description = description;
    this.createTable = createTable;
    this.reserve = reserve;
    this.reserveOnRow = reserveOnRow;
    this.clear = clear;
    this.keyPrefix = keyPrefix;
    this.holds = holds;
    this.fleetBackoff = fleetBackoff;
    this.census = census;
  }

  /**
   * Adds a column to a table from an earlier release; looked up first, because ALTER TABLE would
   * queue behind every reservation in flight even when there is nothing to add.
   */
  private static String addColumnIfMissing(String table, String column, String definition) {
    return "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '"
        + table
        + "'::regclass AND attname = '"
        + column
        + "' AND NOT attisdropped) THEN ALTER TABLE "
        + table
        + " ADD COLUMN "
        + column
        + " "
        + definition
        + "; END IF; END $$;\n";
  }

  /**
   * Seconds from {@code now} to {@code timestamp}, a value another role may have written ({@code
   * 'infinity'} and {@code '-infinity'} included): counted no further than a century either way, so
   * that the subtraction, which fails on an infinite timestamp, always has an answer. A NULL
   * timestamp answers NULL, as a subtraction would; the clamp alone would not, since {@code
   * GREATEST} passes over NULLs.
   *
   * @param now an expression of the instant to count from
   * @param timestamp an expression of the instant to count to
   * @return a numeric expression
   */
  public static String secondsFrom(String now, String timestamp) {
    return "CASE WHEN "
        + timestamp
        + " IS NOT NULL THEN extract(epoch FROM LEAST(GREATEST("
        + timestamp
        + ", "
        + now
        + " - interval '100 years'), "
        + now
        + " + interval '100 years') - "
        + now
        + ") END";
  }

  /** A pause or lockout announced on {@code channel}: kind, key and value, tab-separated. */
  private static String notify(String kind, String keyExpression, String valueExpression) {
    return "pg_notify(?, '"
        + kind
        + "' || chr(9) || "
        + keyExpression
        + " || chr(9) || "
        + valueExpression
        + ")";
  }

  /**
   * A channel name from a table's unqualified name (identifiers are at most 63 bytes), in lower
   * case, as PostgreSQL folds the unquoted table name: two processes naming the table in different
   * cases share it, and so share the channel.
   */
  private static String channel(String table) {
    String bare = table.substring(table.lastIndexOf('.') + 1).toLowerCase(Locale.ROOT);
    String name = bare + "_holds";
    return name.length() > 63 ? name.substring(0, 63) : name;
  }

  /**
   * Where a granted turn starts on a row of Pacer's table: at the later of now and the cursor,
   * unless the reset bound takes the cursor for a corrupt one (see the class comment), when it
   * starts at {@code earliest}. The per-host claim of {@code pacer fetch} reserves with it too.
   *
   * @param row the alias of the cursor's row ({@code next_at}, {@code paused_until})
   * @param ask the alias of the reservation's terms ({@code now}, {@code reset_beyond}, {@code
   *     earliest})
   * @return a timestamptz expression
   */
  public static String pacerTurnStart(String row, String ask) {
    return "CASE WHEN "
        + pacerResets(row, ask)
        + " THEN "
        + ask
        + ".earliest ELSE "
        + pacerCaughtUp(row, ask)
        + " END";
  }

  /**
   * The pacing rule's {@code max(now, next)}, where a turn starts on a cursor that needs no reset.
   */
  private static String pacerCaughtUp(String row, String ask) {
    return "GREATEST(" + ask + ".now, " + row + ".next_at)";
  }

  /**
   * The cursor after a turn granted on a row of Pacer's table: where the turn starts ({@link
   * #pacerTurnStart}) plus {@code spacing}, the pacing rule's {@code max(now, next) + interval}.
   *
   * @param row the alias of the cursor's row
   * @param ask the alias of the reservation's terms
   * @param spacing an interval expression: the gap, times the fleet's multiplier under its backoff
   * @return a timestamptz expression
   */
  public static String pacerNextAt(String row, String ask, String spacing) {
    return pacerTurnStart(row, ask) + " + " + spacing;
  }

  /**
   * Whether the turn {@link #pacerTurnStart} places starts within {@code bound} of the
   * reservation's now: a reservation that is refused otherwise leaves the row as it was.
   *
   * @param row the alias of the cursor's row
   * @param ask the alias of the reservation's terms
   * @param bound an interval expression
   * @return a boolean expression
   */
  public static String pacerStartsWithin(String row, String ask, String bound) {
    return pacerTurnStart(row, ask) + " <= " + ask + ".now + " + bound;
  }

  /**
   * The cursor of {@code row} held back to {@code until} at least, as a pause holds it: turns
   * queued beyond it keep their places.
   *
   * @param row the alias of the cursor's row
   * @param until a timestamptz expression
   * @return a timestamptz expression
   */
  public static String pacerHeldUntil(String row, String until) {
    return "GREATEST(" + row + ".next_at, " + until + ")";
  }

  /**
   * The value of {@code reset_from} that a reservation writes on a row of Pacer's table: the cursor
   * it found, where {@link #pacerTurnStart} resets it; NULL where it does not. The statement
   * returns it, so that the reset is logged with the value actually overwritten.
   *
   * @param row the alias of the cursor's row, as the upsert locked it
   * @param ask the alias of the reservation's terms
   * @return a timestamptz expression
   */
  public static String pacerResetFrom(String row, String ask) {
    return "CASE WHEN " + pacerResets(row, ask) + " THEN " + row + ".next_at END";
  }

  /** Whether the reset bound takes the cursor of {@code row} for a corrupt one. */
  private static String pacerResets(String row, String ask) {
    String next = row + ".next_at";
    String resetBeyond = ask + ".reset_beyond";
    return next
        + " > "
        + ask
        + ".now + "
        + resetBeyond
        + " AND ("
        + row
        + ".paused_until IS NULL OR "
        + next
        + " > LEAST("
        + row
        + ".paused_until, "
        + ask
        + ".now + "
        + LONGEST_PAUSE_MICROS
        + " * interval '1 microsecond') + "
        + resetBeyond
        + ")";
  }

  /** Pacer's own table: a typed timestamptz cursor per destination name. */
  public static CursorSql pacerTable(String table) {
    String lockouts = table + "_lockout";
    String fetchers = table + "_fetcher";
    String createTable = pacerCreateTable(table, lockouts);
    String reserve = pacerReservation(table, lockouts, false);
    String reserveOnRow = pacerReservationOnRow(table);
    String reserveUnderFleetBackoff = pacerReservation(table, lockouts, true);
    String throttled =
        "INSERT INTO "
            + table
            + " AS c (name, next_at, updated_at, backoff)"
            + " VALUES (?, clock_timestamp(), clock_timestamp(), 2)\n"
            + "ON CONFLICT (name) DO UPDATE SET backoff = LEAST("
            + MAX_BACKOFF
            + ", c.backoff * 2), clean = 0\n"
            + "RETURNING c.backoff";
    String clear = "DELETE FROM " + table + " WHERE name = ?";
    return new CursorSql(
        "pacer table " + table,
        createTable,
        reserve,
        reserveOnRow,
        clear,
        "",
        pacerHolds(table, lockouts),
        new FleetBackoff(reserveUnderFleetBackoff, throttled),
        new Census(censusTable(fetchers), census(fetchers)));
  }

  /** The cursors' table and, beside it, the lockouts' table. */
  private static String pacerCreateTable(String table, String lockouts) {
    return "CREATE UNLOGGED TABLE IF NOT EXISTS "
        + table
        + " (\n"
        + "  name         text        PRIMARY KEY,\n"
        + "  next_at      timestamptz NOT NULL,\n"
        + "  updated_at   timestamptz NOT NULL,\n"
        + "  paused_until timestamptz,\n"
        + "  backoff      smallint    NOT NULL DEFAULT 1,\n"
        + "  clean        integer     NOT NULL DEFAULT 0,\n"
        + "  reset_from   timestamptz,\n"
        + "  lockout      text,\n"
        + "  lockout_read boolean     NOT NULL DEFAULT false\n"
        + ");\n"
        + addColumnIfMissing(table, "paused_until", "timestamptz")
        + addColumnIfMissing(table, "backoff", "smallint NOT NULL DEFAULT 1")
        + addColumnIfMissing(table, "clean", "integer NOT NULL DEFAULT 0")
        + addColumnIfMissing(table, "reset_from", "timestamptz")
        + addColumnIfMissing(table, "lockout", "text")
        + addColumnIfMissing(table, "lockout_read", "boolean NOT NULL DEFAULT false")
        // Logged, unlike the cursors: a lockout must outlive a crash.
        + "CREATE TABLE IF NOT EXISTS "
        + lockouts
        + " (\n"
        + "  name      text        PRIMARY KEY,\n"
        + "  reason    text        NOT NULL,\n"
        + "  locked_at timestamptz NOT NULL\n"
        + ")";
  }

  /** The statements of the pauses and the lockouts. */
  private static Holds pacerHolds(String table, String lockouts) {
    String pause = pacerPause(table);
    String lockOut =
        "WITH l AS (\n"
            + "  INSERT INTO "
            + lockouts
            + " AS l (name, reason, locked_at)"
            + " VALUES (?, ?, clock_timestamp())\n"
            + "  ON CONFLICT (name) DO UPDATE SET reason = l.reason\n"
            + "  RETURNING l.name, l.reason),\n"
            // The cursor row carries the lockout too, for the reservation that reads only the row;
            // a missing row is made, so that no reservation can make it without the lockout.
            + "r AS (\n"
            + "  INSERT INTO "
            + table
            + " AS c (name, next_at, updated_at, lockout, lockout_read)\n"
            + "  SELECT l.name, clock_timestamp(), clock_timestamp(), l.reason, true FROM l\n"
            + "  ON CONFLICT (name) DO UPDATE SET lockout = EXCLUDED.lockout, lockout_read ="
            + " true)\n"
            + "SELECT "
            + notify("L", "l.name", "''")
            + " FROM l";
    String clearLockout =
        "WITH k AS (SELECT ?::text AS key),\n"
            + "gone AS (DELETE FROM "
            + lockouts
            + " l USING k WHERE l.name = k.key)\n"
            + "UPDATE "
            + table
            + " c SET lockout = NULL FROM k WHERE c.name = k.key AND c.lockout IS NOT NULL";
    // The limiter caps the pause read at the destination's maxRetryAfter.
    String read =
        "SELECT (SELECT ("
            + secondsFrom("clock_timestamp()", "c.paused_until")
            + " * 1000000)::bigint"
            + " FROM "
            + table
            + " c WHERE c.name = ? AND c.paused_until > clock_timestamp()),\n"
            + "       (SELECT l.reason FROM "
            + lockouts
            + " l WHERE l.name = ?)";
    // By primary key for each key named: the cost grows with the destinations served, never with
    // the table.
    String readAll =
        "SELECT k.key, ("
            + secondsFrom("clock.now", "c.paused_until")
            + " * 1000000)::bigint,"
            + " l.reason\n"
            + "FROM (SELECT clock_timestamp() AS now) AS clock\n"
            + "CROSS JOIN unnest(?::text[]) AS k(key)\n"
            + "LEFT JOIN "
            + table
            + " c ON c.name = k.key AND c.paused_until > clock.now\n"
            + "LEFT JOIN "
            + lockouts
            + " l ON l.name = k.key\n"
            + "WHERE c.name IS NOT NULL OR l.name IS NOT NULL";
    return new Holds(channel(table), pause, lockOut, clearLockout, read, readAll);
  }

  /** A pause: the cursor held until it ends, and the fleet told on the channel. */
  private static String pacerPause(String table) {
    return "WITH p AS MATERIALIZED (\n"
        + "  SELECT ?::text AS key, clock.now,"
        + " clock.now + ?::bigint * interval '1 microsecond' AS until\n"
        + "  FROM (SELECT clock_timestamp() AS now) AS clock),\n"
        + "held AS (\n"
        + "  INSERT INTO "
        + table
        + " AS c (name, next_at, updated_at, paused_until)\n"
        + "  SELECT p.key, p.until, p.now, p.until FROM p\n"
        + "  ON CONFLICT (name) DO UPDATE\n"
        + "    SET next_at = "
        + pacerHeldUntil("c", "EXCLUDED.next_at")
        + ",\n"
        + "        updated_at = EXCLUDED.updated_at,\n"
        + "        paused_until = GREATEST(c.paused_until, EXCLUDED.paused_until)\n"
        + "  RETURNING c.paused_until)\n"
        + "SELECT "
        + notify(
            "P", "p.key", "(extract(epoch FROM held.paused_until - p.now) * 1000000)::bigint::text")
        + " FROM p CROSS JOIN held";
  }

  /**
   * The census's table, made by the census that finds it missing, never with the cursors: a role
   * that may not create it still reserves turns, and only goes uncounted. Unlogged, like the
   * cursors: after a crash the census starts again within a period.
   */
  private static String censusTable(String fetchers) {
    return "CREATE UNLOGGED TABLE IF NOT EXISTS "
        + fetchers
        + " (\n"
        + "  name    text        NOT NULL,\n"
        + "  process text        NOT NULL,\n"
        + "  seen_at timestamptz NOT NULL,\n"
        + "  PRIMARY KEY (name, process)\n"
        + ")";
  }

  /**
   * The census of the processes taking turns, in the table {@code fetchers}: one row per
   * destination and process, its {@code seen_at} the database's clock at that process's last
   * census. The statement records this process against every key it names and answers, per key, the
   * processes seen within the window either side of now, this one included: a row stamped outside
   * it (long ago, or ahead of the clock, as no process writes) counts for nothing, and other
   * processes' such rows under the keys named are deleted, skipping any another census holds, so
   * that no two censuses wait for each other. The count reads at most {@link
   * Destination#MOST_PROCESSES_COUNTED} rows, however many there are. Only this process's own rows
   * are updated, so censuses of different processes never contend for a row.
   *
   * <p>Parameters: process (text), window (bigint microseconds), keys (text[], no key twice).
   * Result rows: key, processes (integer, at least 1).
   */
  private static String census(String fetchers) {
    String recent = "x.seen_at BETWEEN ask.now - ask.span AND ask.now + ask.span";
    return "WITH ask AS MATERIALIZED (\n"
        + "  SELECT k.key, ?::text AS process, ?::bigint * interval '1 microsecond' AS span,"
        + " clock.now\n"
        + "  FROM unnest(?::text[]) AS k(key), (SELECT clock_timestamp() AS now) AS clock),\n"
        + "seen AS (\n"
        + "  INSERT INTO "
        + fetchers
        + " AS f (name, process, seen_at)\n"
        + "  SELECT ask.key, ask.process, ask.now FROM ask\n"
        + "  ON CONFLICT (name, process) DO UPDATE SET seen_at = EXCLUDED.seen_at),\n"
        + "gone AS (\n"
        + "  DELETE FROM "
        + fetchers
        + " WHERE ctid = ANY (ARRAY(\n"
        + "    SELECT x.ctid FROM "
        + fetchers
        + " x JOIN ask ON x.name = ask.key\n"
        + "    WHERE x.process <> ask.process AND NOT ("
        + recent
        + ")\n"
        + "    FOR UPDATE OF x SKIP LOCKED)))\n"
        + "SELECT ask.key, 1 + (SELECT count(*) FROM (SELECT 1 FROM "
        + fetchers
        + " x\n"
        + "    WHERE x.name = ask.key AND x.process <> ask.process AND "
        + recent
        + "\n"
        + "    LIMIT "
        + (Destination.MOST_PROCESSES_COUNTED - 1)
        + ") AS other)::integer\n"
        + "FROM ask";
  }

  /**
   * Pacer's reservation, in two variants: without the fleet's backoff (the default, and the hot
   * path of nearly every destination, which must not pay for what it does not use) and with it.
   * Only the second reads and writes {@code backoff} and {@code clean}, and takes the parameter
   * {@code clean}.
   */
  private static String pacerReservation(String table, String lockouts, boolean fleet) {
    String resetFrom = pacerResetFrom("c", "p");
    // Under the fleet's backoff: the multiplier after this reservation's clean answers are counted,
    // which also spaces this turn, so that the answer's multiplier is the one its wait used.
    String halves = "c.clean + p.clean >= " + CLEAN_ANSWERS_TO_HALVE;
    String backoff = "CASE WHEN " + halves + " THEN GREATEST(1, c.backoff / 2) ELSE c.backoff END";
    String gap = fleet ? "p.gap * (" + backoff + ")" : "p.gap";
    // The gap that spaced the turn just taken (under the fleet's backoff, read back from the row).
    String spaced = fleet ? "p.gap * turn.backoff" : "p.gap";
    return "WITH p AS MATERIALIZED (\n"
        + "  SELECT ask.*, (SELECT l.reason FROM "
        + lockouts
        + " l WHERE l.name = ask.key)"
        + " AS lockout\n"
        + "  FROM (SELECT ?::text AS key,\n"
        + "         ?::bigint * interval '1 microsecond' AS gap,\n"
        + "         ?::bigint * interval '1 microsecond' AS reset_beyond,\n"
        + "         ?::bigint * interval '1 microsecond' AS max_wait,\n"
        + "         clock.now,\n"
        + "         clock.now + ?::bigint * interval '1 microsecond' AS earliest"
        + (fleet ? ",\n         ?::integer AS clean\n" : "\n")
        + "    FROM (SELECT clock_timestamp() AS now) AS clock) AS ask),\n"
        + "turn AS (\n"
        + "  INSERT INTO "
        + table
        + " AS c (name, next_at, updated_at, lockout_read)\n"
        + "  SELECT p.key, p.earliest + p.gap, p.now, true FROM p\n"
        + "  WHERE p.lockout IS NULL AND "
        + insertWithinMaxWait("EXISTS (SELECT 1 FROM " + table + " x WHERE x.name = p.key)")
        + "\n"
        + "  ON CONFLICT (name) DO UPDATE\n"
        + pacerAdvance(fleet, gap, resetFrom, backoff, halves)
        + "    WHERE (SELECT p.max_wait IS NULL OR "
        + pacerStartsWithin("c", "p", "p.max_wait")
        + " FROM p)\n"
        + "  RETURNING c.next_at, c.reset_from"
        + (fleet ? ", c.backoff" : "")
        + ")\n"
        + "SELECT (extract(epoch FROM turn.next_at - "
        + spaced
        + " - p.now)"
        + " * 1000000)::bigint AS wait_micros,\n"
        + "       ("
        + secondsFrom("p.now", "turn.reset_from")
        + " * 1000000)::bigint"
        + " AS prior_ahead_micros,\n"
        + "       turn.reset_from IS NOT NULL AS prior_existed,\n"
        + "       (extract(epoch FROM p.now) * 1000000)::bigint AS now_micros,\n"
        + "       p.lockout AS lockout_reason,\n"
        + "       "
        + (fleet ? "turn.backoff" : "NULL::smallint")
        + " AS fleet_backoff\n"
        + "FROM p LEFT JOIN turn ON true";
  }

  /**
   * The reservation's update of a row it finds: the turn, and under the fleet's backoff the
   * multiplier and the count of clean answers.
   */
  private static String pacerAdvance(
      boolean fleet, String gap, String resetFrom, String backoff, String halves) {
    return fleet
        ? "    SET (next_at, updated_at, reset_from, backoff, clean, lockout_read) = (SELECT\n"
            + "          "
            + pacerNextAt("c", "p", gap)
            + ",\n"
            + "          p.now,\n"
            + "          "
            + resetFrom
            + ",\n"
            + "          "
            + backoff
            + ",\n"
            + "          CASE WHEN "
            + halves
            + " THEN 0 ELSE c.clean + p.clean END,\n"
            + "          true\n"
            + "        FROM p)\n"
        : "    SET (next_at, updated_at, reset_from, lockout_read) = (SELECT "
            + pacerNextAt("c", "p", "p.gap")
            + ", p.now, "
            + resetFrom
            + ", true FROM p)\n";
  }

  /**
   * Pacer's plain reservation on a row that exists, is known not to be locked out and needs no
   * reset: an {@code UPDATE} of that row alone, {@code next = max(now, next) + gap}, with no read
   * of the lockouts' table. Any other case updates nothing and returns no row, and the cursor makes
   * the full statement ({@link #pacerReservation}), which decides it:
   *
   * <ul>
   *   <li>the row is missing (never made, deleted, or the crash emptied the unlogged table): the
   *       full statement reads the lockouts' table before it makes the row;
   *   <li>the row was not checked against the lockouts' table ({@code lockout_read} false): another
   *       statement made it (a pause, the fleet's backoff, a claim of {@code pacer fetch}) or an
   *       earlier release did; the full statement reads the lockouts' table and marks it checked;
   *   <li>the row is locked out ({@code lockout}, which every lockout writes with the logged record
   *       and every clearing clears with it): the full statement answers with the reason;
   *   <li>the cursor lies beyond the reset bound (a corrupt value, or a pause longer than the
   *       bound): the full statement resets it or honours the pause, and logs a reset;
   *   <li>a max_wait is given: the full statement alone refuses a turn beyond it.
   * </ul>
   *
   * So a lockout still reaches every process at once (the row says so) and outlives a crash (the
   * logged record says so to the row made after it), and the common reservation pays for none of
   * it. Its now is {@code statement_timestamp()}, the instant the server received the statement,
   * not {@code clock_timestamp()}: a stable function, so the planner folds the reservation's terms
   * into a scan of the primary key with no join, where a volatile one would keep them a subquery
   * joined to the row. Both are read before the row lock is waited for, so the turn is spaced from
   * the cursor as the full statement spaces it. Nothing is returned that the cursor does not use.
   *
   * <p>Parameters as {@link #pacerReservation}'s (not_before is not used: it matters only for a row
   * made or reset). Result columns: {@code wait_micros}, {@code now_micros}.
   */
  private static String pacerReservationOnRow(String table) {
    return "UPDATE "
        + table
        + " AS c\n"
        + "SET next_at = "
        + pacerCaughtUp("c", "p")
        + " + p.gap, updated_at = p.now,"
        + " reset_from = NULL\n"
        + "FROM (SELECT ?::text AS key,\n"
        + "        ?::bigint * interval '1 microsecond' AS gap,\n"
        + "        ?::bigint * interval '1 microsecond' AS reset_beyond,\n"
        + "        ?::bigint AS max_wait,\n"
        + "        ?::bigint AS not_before,\n"
        + "        statement_timestamp() AS now) AS p\n"
        + "WHERE c.name = p.key AND c.lockout_read AND c.lockout IS NULL AND p.max_wait IS NULL\n"
        + "  AND c.next_at <= p.now + p.reset_beyond\n"
        + "RETURNING (extract(epoch FROM c.next_at - p.gap - p.now) * 1000000)::bigint,\n"
        + "  (extract(epoch FROM p.now) * 1000000)::bigint";
  }

  /**
   * The plain reservation on a row known not to be locked out ({@link #pacerReservationOnRow}), to
   * try before {@link #reserve}; null where the layout has none.
   */
  public String reserveOnRow() {
    return reserveOnRow;
  }

  /** The DDL to run before first use, or null when the table is the user's and must exist. */
  public String createTable() {
    return createTable;
  }

  public String reserve() {
    return reserve;
  }

  public String clear() {
    return clear;
  }

  public Holds holds() {
    return holds;
  }

  /**
   * The census of the processes taking turns, or null where the layout has nowhere to keep it: a
   * key/value table is the user's, and gets no table beside it.
   */
  public Census census() {
    return census;
  }

  /** The fleet's backoff statements, or null where the layout has nowhere to keep it. */
  public FleetBackoff fleetBackoff() {
    return fleetBackoff;
  }

  /** The row key of a destination. */
  public String key(String destinationName) {
    return keyPrefix.isEmpty() ? destinationName : keyPrefix + destinationName;
  }

  @Override
  public String toString() {
    return description;
  }
}
