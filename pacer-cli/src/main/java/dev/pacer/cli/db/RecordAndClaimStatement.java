package dev.pacer.cli.db;

import dev.pacer.cli.db.ItemStore.Done;
import dev.pacer.cli.db.ItemStore.Item;
import dev.pacer.cli.db.ItemStore.Made;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The statement of {@link ItemStore#recordAndClaim}, apart from the store so that it reads as one
 * piece: its SQL, its parameters and its answer.
 */
final class RecordAndClaimStatement {

  private static final String SQL =
      "WITH done AS (UPDATE pacer_item p SET state = 'done', last_status = d.status,"
          + "   last_error = NULL, body_path = d.body_path, bytes = d.bytes,"
          + "   sha256 = d.sha256, durable = d.durable, lease_token = d.token,"
          + "   finished_at = now(), leased_by = NULL, lease_until = NULL"
          + "   FROM unnest(?::text[], ?::text[], ?::int[], ?::text[], ?::bigint[],"
          + "     ?::text[], ?::boolean[])"
          + "     AS d(url_key, token, status, body_path, bytes, sha256, durable)"
          + "   WHERE p.job = ? AND p.url_key = d.url_key"
          + "     AND ((p.state = 'leased' AND p.lease_token = d.token)"
          // Nobody holds it, and this token did not give it back: its claim was forgotten.
          + "       OR (p.state = 'pending' AND p.lease_token IS DISTINCT FROM d.token))"
          + "   RETURNING d.token),"
          // On the statement's snapshot: done by an earlier run of it, never by this
          // one.
          + " done_before AS (SELECT lease_token AS token FROM pacer_item"
          + "   WHERE job = ? AND url_key = ANY (?::text[]) AND state = 'done'"
          + "     AND lease_token = ANY (?::text[])),"
          // Leased by an earlier run of it: answered again, the lease renewed. Looked for only if
          // a run of it may have been made before: a token never sent holds no item.
          + " mine AS (UPDATE pacer_item SET lease_until = now() + ? * interval '1"
          + " millisecond'   WHERE ?::boolean AND job = ? AND state = 'leased'"
          + "     AND lease_token = ANY (?::text[])"
          + "   RETURNING url_key, url, failures, throttles, lease_token),"
          // Settled, or every worker of the job seen before the server's last start seen since.
          + " settled AS (SELECT CASE WHEN ?::boolean THEN true ELSE NOT EXISTS (SELECT 1"
          + "   FROM pacer_worker w WHERE w.job = ? AND w.state IN ('running', 'stopping')"
          + "     AND w.last_seen < pg_postmaster_start_time()"
          + "     AND w.last_seen > pg_postmaster_start_time() - ? * interval '1 millisecond')"
          + "   END AS ok),"
          // Pending items by their own index, lapsed leases by theirs, each in the job's order:
          // never a walk over the items leased and held, which a worker's buffer makes many.
          + " pending AS (SELECT job, url_key, seq FROM pacer_item"
          + "   WHERE job = ? AND state = 'pending' AND not_before <= now()"
          + "     AND (SELECT ok FROM settled) AND url_key <> ALL (?::text[])"
          + "     AND url_key NOT IN (SELECT url_key FROM mine)"
          + "   ORDER BY seq LIMIT cardinality(?::text[]) - (SELECT count(*) FROM mine)"
          + "   FOR UPDATE SKIP LOCKED),"
          // Looked for only if the earliest lease has run out, which one descent of the lease
          // index answers: most statements find none, and the walk would cross every lease held.
          // Asked in that index's order, which only it gives: a min() the planner may take from
          // any index of leased items, the per-host one included, when the job's statistics say
          // few are leased (as they do from its enqueue until the next analyze).
          + " lapsed AS (SELECT job, url_key, seq FROM pacer_item"
          + "   WHERE ?::boolean AND job = ? AND state = 'leased' AND lease_until < now()"
          + "     AND (SELECT lease_until FROM pacer_item WHERE job = ? AND state = 'leased'"
          + "       ORDER BY job, lease_until LIMIT 1) < now()"
          + "     AND url_key <> ALL (?::text[]) AND url_key NOT IN (SELECT url_key FROM mine)"
          + "   ORDER BY seq LIMIT cardinality(?::text[]) - (SELECT count(*) FROM mine)"
          + "   FOR UPDATE SKIP LOCKED),"
          + " picked AS (SELECT job, url_key, seq FROM (SELECT * FROM pending UNION ALL"
          + "   SELECT * FROM lapsed) AS c"
          + "   ORDER BY seq LIMIT cardinality(?::text[]) - (SELECT count(*) FROM mine)),"
          + " numbered AS (SELECT job, url_key, row_number() OVER (ORDER BY"
          + " seq) AS n   FROM picked), unheld AS (SELECT t, row_number() OVER (ORDER"
          + " BY o) AS n   FROM unnest(?::text[]) WITH ORDINALITY AS u(t, o)   WHERE t"
          + " NOT IN (SELECT lease_token FROM mine)), claimed AS (UPDATE pacer_item i"
          + " SET state = 'leased', leased_by = ?,   lease_token = u.t, lease_until ="
          + " now() + ? * interval '1 millisecond'   FROM numbered n JOIN unheld u ON"
          + " u.n = n.n   WHERE i.job = n.job AND i.url_key = n.url_key   RETURNING"
          + " i.url_key, i.url, i.failures, i.throttles, i.lease_token) SELECT 0,"
          + " token, NULL::text, NULL::int, NULL::int, NULL::text FROM done UNION ALL"
          + " SELECT 2, token, NULL, NULL, NULL, NULL FROM done_before UNION ALL SELECT"
          + " 1, url_key, url, failures, throttles, lease_token FROM mine UNION ALL"
          + " SELECT 1, url_key, url, failures, throttles, lease_token   FROM"
          + " claimed";

  private RecordAndClaimStatement() {}

  /**
   * The statement: records every one of {@code dones} whose lease still holds, or whose item nobody
   * holds (pending, and not given back by the outcome's own token: a crash of the server forgot the
   * claim), and claims an item for each of {@code claimTokens} in the job's order for {@code
   * workerId}, in the tokens' order, none of them one it records. A token that holds an item
   * already (this statement made before, its answer lost) answers that item, looked for only if
   * {@code again} (some of the tokens were sent before: a token never sent holds no item), and a
   * done recorded already by its own token counts as recorded. With no tokens it only records, and
   * {@code workerId} is not used. If {@code settled} (no outage lately), pending items are claimed
   * and so are items whose leases ran out; otherwise no lapsed item, and a pending one only once
   * every worker of the job seen within {@code leaseMillis} before the server's last start has been
   * seen since ({@link ItemStore}'s class comment).
   */
  static Made run(
      Connection c,
      String job,
      List<Done> dones,
      String workerId,
      long leaseMillis,
      List<String> claimTokens,
      boolean again,
      boolean settled)
      throws SQLException {
    try (PreparedStatement s = c.prepareStatement(SQL)) {
      bind(s, c, job, dones, workerId, leaseMillis, claimTokens, again, settled);
      return answer(s, job);
    }
  }

  private static void bind(
      PreparedStatement s,
      Connection c,
      String job,
      List<Done> dones,
      String workerId,
      long leaseMillis,
      List<String> claimTokens,
      boolean again,
      boolean settled)
      throws SQLException {
    int d = dones.size();
    String[] keys = new String[d];
    String[] doneTokens = new String[d];
    Integer[] statuses = new Integer[d];
    String[] paths = new String[d];
    Long[] bytes = new Long[d];
    String[] digests = new String[d];
    Boolean[] durable = new Boolean[d];
    for (int i = 0; i < d; i++) {
      Done done = dones.get(i);
      keys[i] = done.item().key();
      doneTokens[i] = done.item().token();
      statuses[i] = done.status();
      paths[i] = done.bodyPath();
      bytes[i] = done.bytes();
      digests[i] = done.sha256();
      durable[i] = done.durable();
    }
    java.sql.Array tokens = c.createArrayOf("text", claimTokens.toArray());
    java.sql.Array recorded = c.createArrayOf("text", keys);
    s.setArray(1, recorded);
    s.setArray(2, c.createArrayOf("text", doneTokens));
    s.setArray(3, c.createArrayOf("int4", statuses));
    s.setArray(4, c.createArrayOf("text", paths));
    s.setArray(5, c.createArrayOf("int8", bytes));
    s.setArray(6, c.createArrayOf("text", digests));
    s.setArray(7, c.createArrayOf("bool", durable));
    s.setString(8, job);
    s.setString(9, job);
    s.setArray(10, recorded);
    s.setArray(11, c.createArrayOf("text", doneTokens));
    s.setLong(12, leaseMillis);
    s.setBoolean(13, again);
    s.setString(14, job);
    s.setArray(15, tokens);
    s.setBoolean(16, settled);
    s.setString(17, job);
    s.setLong(18, leaseMillis);
    s.setString(19, job);
    s.setArray(20, recorded);
    s.setArray(21, tokens);
    s.setBoolean(22, settled);
    s.setString(23, job);
    s.setString(24, job);
    s.setArray(25, recorded);
    s.setArray(26, tokens);
    s.setArray(27, tokens);
    s.setArray(28, tokens);
    s.setString(29, workerId);
    s.setLong(30, leaseMillis);
  }

  /**
   * The tokens recorded (by this statement, or before it), the items claimed by their tokens, and
   * how many outcomes this statement recorded.
   */
  private static Made answer(PreparedStatement s, String job) throws SQLException {
    Set<String> recorded = new HashSet<>();
    Map<String, Item> claimed = new HashMap<>();
    int recordedNow = 0;
    try (ResultSet r = s.executeQuery()) {
      while (r.next()) {
        long kind = r.getLong(1);
        if (kind == 0 || kind == 2) {
          recorded.add(r.getString(2));
          recordedNow += kind == 0 ? 1 : 0;
        } else {
          claimed.put(
              r.getString(6),
              new Item(
                  job, r.getString(2), r.getString(3), r.getInt(4), r.getInt(5), r.getString(6)));
        }
      }
    }
    return new Made(recorded, claimed, recordedNow);
  }
}
