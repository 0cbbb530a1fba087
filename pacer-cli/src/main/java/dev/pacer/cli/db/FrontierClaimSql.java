package dev.pacer.cli.db;

import dev.pacer.postgres.PacerTableSql;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;

/**
 * The per-host claim's statement ({@link FrontierStore#claim}): the SQL that picks an eligible
 * host, takes its turn on the host's cursor row as the library's reservation takes one, and leases
 * one of its items, all in one round trip; and the binding of its parameters. Apart from the store
 * so that the statement reads as one piece.
 */
final class FrontierClaimSql {

  private FrontierClaimSql() {}

  /**
   * The claim statement on the cursors' table {@code cursors} (a name {@link CursorPlace} has
   * checked) and its lockouts' table beside it. Parameters: job, horizon (µs), reset floor (µs),
   * claimant (the fetch thread), worker, the lease tokens the worker's threads hold now (its items
   * in flight or waiting to be recorded), whether an item whose lease ran out may be leased, lease
   * token, lease (ms). One row: the item (url_key, url, failures, throttles; NULL if none was
   * leased), the host and its rate (NULL if no host was picked), wait_micros (from the statement's
   * now to the turn; NULL if no turn was granted), lockout_reason, wake_micros (until half the
   * horizon before the turn this claim now awaits, or until one horizon after the soonest turn if
   * every coming turn is awaited; NULL if no host has a turn coming), contended (nothing was picked
   * although a host was eligible: another claim held its row), held (some host is due but could not
   * be claimed), fronts, backoff (the host's multiplier), reset_from_micros (how far ahead of now
   * the turn found the host's cursor, where it reset it; NULL otherwise) with the host's
   * reset_beyond_micros, and now_micros (the statement's now, on the database's clock, in epoch
   * microseconds).
   */
  static String claim(String cursors) {
    String lockouts = cursors + "_lockout";
    return "WITH p AS MATERIALIZED (\n"
        + "  SELECT clock_timestamp() AS now, ?::text AS job,\n"
        + "         ?::bigint * interval '1 microsecond' AS horizon,\n"
        + "         ?::bigint * interval '1 microsecond' AS reset_floor,\n"
        + "         ?::text AS claimant, ?::text AS worker, ?::text[] AS held_tokens,\n"
        + "         ?::boolean AS settled),\n"
        + "pick AS MATERIALIZED (\n"
        + "  SELECT f.host, f.rate, f.interval_us * interval '1 microsecond' AS gap,\n"
        + "         f.next_at AS known_next, i.url_key\n"
        + "  FROM pacer_frontier f\n"
        + "  CROSS JOIN LATERAL (\n"
        + "    SELECT it.url_key FROM pacer_item it\n"
        + "    WHERE "
        + claimableItem("it", "f")
        + "\n"
        + "    ORDER BY it.seq LIMIT 1) i\n"
        + "  WHERE "
        + eligibleHost("f")
        + "\n"
        + "  ORDER BY f.next_at\n"
        + "  LIMIT 1\n"
        + "  FOR UPDATE OF f SKIP LOCKED),\n"
        + "c AS MATERIALIZED (\n"
        + "  SELECT pick.*, p.now, p.horizon,\n"
        + "         (SELECT l.reason FROM "
        + lockouts
        + " l WHERE l.name = pick.host)"
        + " AS lockout,\n"
        + "         GREATEST(p.now, pick.known_next) AS earliest,\n"
        + "         GREATEST(p.reset_floor, pick.gap * 64) AS reset_beyond\n"
        + "  FROM pick CROSS JOIN p),\n"
        + turn(cursors)
        + leaseAndFront(cursors)
        + awaits()
        + answer();
  }

  /** The host's turn on its cursor row, spaced and refused as the library's reservation has it. */
  private static String turn(String cursors) {
    String next = PacerTableSql.nextAt("k", "c", "c.gap * k.backoff");
    String resetFrom = PacerTableSql.resetFrom("k", "c");
    return "turn AS (\n"
        + "  INSERT INTO "
        + cursors
        + " AS k (name, next_at, updated_at)\n"
        + "  SELECT c.host, c.earliest + c.gap, c.now FROM c\n"
        + "  WHERE c.lockout IS NULL AND c.earliest <= c.now + c.horizon\n"
        + "  ON CONFLICT (name) DO UPDATE\n"
        + "    SET (next_at, updated_at, reset_from) = (SELECT "
        + next
        + ","
        + " c.now, "
        + resetFrom
        + " FROM c)\n"
        + "    WHERE (SELECT "
        + PacerTableSql.startsWithin("k", "c", "c.horizon")
        + " FROM c)\n"
        + "  RETURNING k.next_at, k.backoff, k.reset_from),\n";
  }

  /** The item's lease with the turn, and the host's frontier row moved to its next turn. */
  private static String leaseAndFront(String cursors) {
    return "lease AS (\n"
        + "  UPDATE pacer_item i SET state = 'leased', leased_by = (SELECT worker FROM p),\n"
        + "         lease_token = ?, ahead = false,\n"
        + "         lease_until = c.now + ?::bigint * interval '1 millisecond'\n"
        + "  FROM c, turn\n"
        + "  WHERE i.job = (SELECT job FROM p) AND i.url_key = c.url_key\n"
        + "    AND ((i.state = 'pending' AND i.not_before <= c.now)\n"
        + "      OR (i.state = 'leased' AND i.lease_until < c.now AND (SELECT settled FROM p))\n"
        + "      OR "
        + ownAhead("i")
        + ")\n"
        + "  RETURNING i.url_key, i.url, i.failures, i.throttles),\n"
        + "front AS (\n"
        + "  UPDATE pacer_frontier f SET next_at = CASE WHEN c.lockout IS NOT NULL"
        + " THEN 'infinity'::timestamptz\n"
        + "      ELSE COALESCE((SELECT turn.next_at FROM turn),\n"
        + "                    (SELECT k.next_at FROM "
        + cursors
        + " k WHERE k.name = c.host),"
        + " c.now) END\n"
        + "  FROM c WHERE f.job = (SELECT job FROM p) AND f.host = c.host\n"
        + "  RETURNING f.next_at),\n";
  }

  /**
   * Nothing picked: the claim awaits the soonest turn no other claimant awaits (one this claimant
   * awaited already counts as free to it) of a host with an item it could claim, so that one thread
   * of the fleet wakes for each turn, not every idle one for the first, and not one that would find
   * nothing to claim at it (the host's items all leased, in flight or ahead by another worker).
   */
  private static String awaits() {
    return "awaits AS (\n"
        + "  UPDATE pacer_frontier g SET awaited_at = g.next_at,"
        + " awaited_by = (SELECT claimant FROM p)\n"
        + "  FROM (SELECT n.host FROM pacer_frontier n, p\n"
        + "        WHERE NOT EXISTS (SELECT 1 FROM c)\n"
        + "          AND n.job = p.job AND n.active\n"
        + "          AND n.next_at > p.now + p.horizon AND n.next_at < 'infinity'\n"
        + "          AND (n.awaited_at IS DISTINCT FROM n.next_at"
        + " OR n.awaited_by = p.claimant)\n"
        + "          AND EXISTS (SELECT 1 FROM pacer_item it WHERE "
        + claimableItem("it", "n")
        + ")\n"
        + "        ORDER BY n.next_at LIMIT 1\n"
        + "        FOR UPDATE OF n SKIP LOCKED) w\n"
        + "  WHERE g.job = (SELECT job FROM p) AND g.host = w.host\n"
        + "  RETURNING g.next_at)\n";
  }

  /** The row answered: see {@link #claim}. */
  private static String answer() {
    return "SELECT lease.url_key, lease.url, lease.failures, lease.throttles, c.host, c.rate,\n"
        // From c.now, which the statement answers too: the process's database clock maps the
        // turn onto its own clock, so that a statement slowed (by a row lock, a busy server)
        // answers a turn that may have begun before the answer came back.
        + "       (extract(epoch FROM turn.next_at - c.gap * turn.backoff - c.now)"
        + " * 1000000)::bigint AS wait_micros,\n"
        + "       c.lockout,\n"
        // Half the horizon before the awaited turn; with every coming turn awaited already, a
        // horizon after the soonest turn, by which its waker has claimed it (or has not, and
        // this thread claims it that much late rather than the host losing the turn).
        + "       (extract(epoch FROM COALESCE((SELECT a.next_at - p.horizon / 2 FROM awaits a),\n"
        + "          (SELECT g.next_at + p.horizon FROM pacer_frontier g WHERE g.job = p.job\n"
        + "             AND g.active AND g.next_at > p.now + p.horizon AND g.next_at < 'infinity'\n"
        + "           ORDER BY g.next_at LIMIT 1)) - p.now) * 1000000)::bigint AS wake_micros,\n"
        // Nothing picked, yet a host was eligible in this statement's snapshot: its row was
        // locked by another claim, which the pick skipped.
        + "       (SELECT true FROM pacer_frontier e\n"
        + "          WHERE NOT EXISTS (SELECT 1 FROM c) AND "
        + eligibleHost("e")
        + "\n"
        + "            AND EXISTS (SELECT 1 FROM pacer_item it WHERE "
        + claimableItem("it", "e")
        + ")\n"
        + "          LIMIT 1) AS contended,\n"
        // The soonest host is due yet none was picked: held. Read from the index's first entry
        // (an EXISTS would be planned as a scan that stops at the first of many due rows).
        + "       (SELECT h.next_at <= p.now + p.horizon FROM pacer_frontier h\n"
        + "          WHERE h.job = p.job AND h.active ORDER BY h.next_at LIMIT 1) AS held,\n"
        + "       (SELECT count(*) FROM front) AS fronts,\n"
        + "       turn.backoff,\n"
        + "       ("
        + PacerTableSql.secondsFrom("c.now", "turn.reset_from")
        + " * 1000000)::bigint"
        + " AS reset_from_micros,\n"
        + "       (extract(epoch FROM c.reset_beyond) * 1000000)::bigint"
        + " AS reset_beyond_micros,\n"
        + "       (extract(epoch FROM c.now) * 1000000)::bigint AS now_micros\n"
        + "FROM p LEFT JOIN c ON true LEFT JOIN turn ON true LEFT JOIN lease ON true";
  }

  /**
   * The frontier row {@code f} may be claimed now, but for its item and its lock: the job's,
   * active, its turn within the horizon and not awaited by another claimant (unless it has
   * started), fewer items in flight than its cap. The statement's {@code p} gives the job, now, the
   * horizon and the claimant.
   */
  private static String eligibleHost(String f) {
    return f
        + ".job = (SELECT job FROM p) AND "
        + f
        + ".active\n"
        + "    AND "
        + f
        + ".next_at <= (SELECT now + horizon FROM p)\n"
        + "    AND ("
        + f
        + ".awaited_at IS DISTINCT FROM "
        + f
        + ".next_at"
        + " OR "
        + f
        + ".awaited_by = (SELECT claimant FROM p)"
        + " OR "
        + f
        + ".next_at <= (SELECT now FROM p))\n"
        + "    AND (SELECT count(*) FROM pacer_item l WHERE l.job = "
        + f
        + ".job"
        + " AND l.host = "
        + f
        + ".host\n"
        + "         AND l.state = 'leased' AND NOT l.ahead"
        + " AND l.lease_until >= (SELECT now FROM p))"
        + " < "
        + f
        + ".max_in_flight";
  }

  /**
   * The item {@code it} of the frontier row {@code f} may be leased now: pending and due, leased
   * with its lease run out (unless the claimant says a return from an outage is not settled yet:
   * the workers' leases ran on while PostgreSQL was away, and their owners extend them with their
   * next heartbeats), or leased ahead by the claiming worker and not held by its threads.
   */
  private static String claimableItem(String it, String f) {
    return it
        + ".job = "
        + f
        + ".job AND "
        + it
        + ".host = "
        + f
        + ".host"
        + " AND "
        + it
        + ".state IN ('pending', 'leased')\n"
        + "      AND (("
        + it
        + ".state = 'pending'"
        + " AND "
        + it
        + ".not_before <= (SELECT now FROM p))\n"
        + "        OR ("
        + it
        + ".state = 'leased'"
        + " AND "
        + it
        + ".lease_until < (SELECT now FROM p)"
        + " AND (SELECT settled FROM p))\n"
        + "        OR "
        + ownAhead(it)
        + ")";
  }

  /**
   * The item {@code it} is in the claiming worker's buffer ({@code LeasedAhead}): leased ahead by
   * it, and not taken by one of its threads to fetch while PostgreSQL was away (those hold their
   * items under the tokens the claim names), so that the worker's claims take its buffered items at
   * their hosts' turns as they take pending ones, and a buffered item is never fetched twice.
   */
  private static String ownAhead(String it) {
    return "("
        + it
        + ".state = 'leased' AND "
        + it
        + ".ahead AND "
        + it
        + ".leased_by = (SELECT worker FROM p)"
        + " AND "
        + it
        + ".lease_token <> ALL ((SELECT held_tokens FROM p)::text[]))";
  }

  static void bindClaim(
      PreparedStatement s,
      String job,
      String claimant,
      String workerId,
      String token,
      long leaseMillis)
      throws SQLException {
    bindClaim(
        s, job, claimant, workerId, List.of(), true, token, leaseMillis, FrontierStore.HORIZON);
  }

  static void bindClaim(
      PreparedStatement s,
      String job,
      String claimant,
      String workerId,
      Collection<String> held,
      boolean settled,
      String token,
      long leaseMillis,
      Duration horizon)
      throws SQLException {
    s.setString(1, job);
    s.setLong(2, horizon.toNanos() / 1000);
    s.setLong(3, FrontierStore.RESET_FLOOR.toNanos() / 1000);
    s.setString(4, claimant);
    s.setString(5, workerId);
    s.setArray(6, s.getConnection().createArrayOf("text", held.toArray()));
    s.setBoolean(7, settled);
    s.setString(8, token);
    s.setLong(9, leaseMillis);
  }
}
