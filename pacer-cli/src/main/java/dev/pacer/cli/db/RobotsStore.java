package dev.pacer.cli.db;

import dev.pacer.cli.model.Secrets;
import dev.pacer.postgres.PacerTableSql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The robots.txt of each host of a per-host job run with {@code --robots}: one row per (job, host)
 * in {@code pacer_robots}, so that the fleet fetches each host's robots.txt once per job, whichever
 * process gets to it, and every process obeys the same answer.
 *
 * <h2>A host's row</h2>
 *
 * {@code wanted} (to be fetched, not before {@code not_before}) → {@code fetching} (leased to one
 * worker, as an item is: a worker that dies leaves it to be taken again when the lease runs out) →
 * {@code fetched} (the answer is stored: status and body) → {@code applied} (its rules were applied
 * to the host's open items and the host joined the frontier). A host whose robots.txt could not be
 * had ends {@code unavailable}, its items {@code deferred}; the next run of the job wants it again.
 *
 * <h2>The gate</h2>
 *
 * Until its row is {@code applied} a host's frontier row stands at {@code next_at = infinity},
 * where the claim ({@link FrontierStore#claim}) never reaches it, as it never reaches a host locked
 * out: no item of a host is fetched before its robots.txt has been read. {@link #settle} opens the
 * gate, in the same transaction that skips the items robots.txt disallows and widens the host's
 * interval to its {@code Crawl-delay}. A later run of the job reads no robots.txt again: {@link
 * #plan} turns {@code applied} rows back to {@code fetched}, and the stored answer is applied to
 * the items enqueued since.
 */
public final class RobotsStore {

  /**
   * A host's robots.txt to settle: fetch it, or, if {@code stored} is present, apply that. {@code
   * sampleUrl} is the host's first item, whose scheme and port robots.txt is asked on (empty if the
   * host has no item left); {@code rate} its ceiling, at which robots.txt takes its turn.
   */
  public record Work(
      String job,
      String host,
      double rate,
      int attempts,
      Optional<Fetched> stored,
      Optional<String> sampleUrl) {}

  /** An answer to {@code GET /robots.txt}: its status, and a 2xx's body (else empty). */
  public record Fetched(int status, byte[] body) {}

  /**
   * What a host's robots.txt means for its items: {@code verdict}, for the operator; the open items
   * to skip ({@code skip}, given each item's URL) and why ({@code reason}); and the least interval
   * between the host's requests ({@code minInterval}: its {@code Crawl-delay}, or zero).
   */
  public record Settlement(
      String verdict, Predicate<String> skip, String reason, Duration minInterval) {}

  /** A host's robots.txt as this job last left it, with the items it skipped. */
  public record HostReport(
      String host, String state, Integer status, String verdict, long skipped) {}

  private final StoreConnection connection;
  private final String cursors;

  RobotsStore(StoreConnection connection, CursorPlace place) {
    this.connection = connection;
    this.cursors = place.table();
  }

  /**
   * Wants the robots.txt of every host of the job's frontier with an open item (one read before,
   * and usable, is kept: turned back to {@code fetched} to be applied to new items; one unavailable
   * is wanted again), and closes every host's gate until its row is applied (a host with no open
   * item and no row has nothing behind it). Call after {@link FrontierStore#plan}.
   */
  public void plan(String job) throws SQLException {
    connection.transaction(
        c -> {
          update(
              c,
              "INSERT INTO pacer_robots (job, host) SELECT f.job, f.host FROM pacer_frontier f"
                  + " WHERE f.job = ? AND EXISTS (SELECT 1 FROM pacer_item i WHERE i.job = f.job"
                  + "   AND i.host = f.host AND i.state IN ('pending', 'leased'))"
                  + " ON CONFLICT (job, host) DO NOTHING",
              job);
          update(
              c,
              "UPDATE pacer_robots SET state = 'wanted', attempts = 0,"
                  + " not_before = '-infinity', status = NULL, body = NULL,"
                  + " fetched_at = NULL, verdict = NULL WHERE job = ? AND state = 'unavailable'",
              job);
          update(
              c,
              "UPDATE pacer_robots SET state = 'fetched' WHERE job = ? AND state = 'applied'",
              job);
          update(c, "UPDATE pacer_frontier SET next_at = 'infinity' WHERE job = ?", job);
          return null;
        });
  }

  /**
   * Leases the next host whose robots.txt is due to be fetched or applied, to {@code workerId} for
   * {@code leaseMillis} under the lease token {@code token}; empty if none is due now. Made again
   * with the same token (its answer lost after it committed), it answers the host that token
   * leased, its lease renewed, instead of leasing another, whose robots.txt would wait, leased to
   * nobody who knows it, for as long as the worker extends its leases.
   */
  public Optional<Work> claim(String job, String workerId, String token, long leaseMillis)
      throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "WITH mine AS (UPDATE pacer_robots SET lease_until = now() + ? * interval '1"
                      + " millisecond'  WHERE job = ? AND state = 'fetching' AND lease_token = ? "
                      + " RETURNING job, host, attempts, status, body, fetched_at), pick AS (SELECT"
                      + " job, host, attempts, status, body, fetched_at  FROM pacer_robots WHERE"
                      + " job = ? AND NOT EXISTS (SELECT 1 FROM mine)   AND ((state IN ('wanted',"
                      + " 'fetched') AND not_before <= now())     OR (state = 'fetching' AND"
                      + " lease_until < now()))"
                      // A host never leased (or given back) before one whose lease ran out.
                      + "  ORDER BY not_before, lease_until NULLS FIRST, host LIMIT 1  FOR UPDATE"
                      + " SKIP LOCKED), taken AS (UPDATE pacer_robots r SET state = 'fetching',"
                      + " leased_by = ?,  lease_token = ?, lease_until = now() + ? * interval '1"
                      + " millisecond'  FROM pick WHERE r.job = pick.job AND r.host = pick.host "
                      + " RETURNING pick.job, pick.host, pick.attempts, pick.status, pick.body,  "
                      + " pick.fetched_at), w AS (SELECT * FROM mine UNION ALL SELECT * FROM taken)"
                      + " SELECT w.host, w.attempts, w.fetched_at IS NOT NULL, w.status, w.body, "
                      + " (SELECT i.url FROM pacer_item i   WHERE i.job = w.job AND i.host = w.host"
                      + " ORDER BY i.seq LIMIT 1),  (SELECT f.rate FROM pacer_frontier f WHERE"
                      + " f.job = w.job AND f.host = w.host) FROM w")) {
            s.setLong(1, leaseMillis);
            s.setString(2, job);
            s.setString(3, token);
            s.setString(4, job);
            s.setString(5, workerId);
            s.setString(6, token);
            s.setLong(7, leaseMillis);
            try (ResultSet r = s.executeQuery()) {
              if (!r.next()) {
                return Optional.<Work>empty();
              }
              Optional<Fetched> stored =
                  r.getBoolean(3)
                      ? Optional.of(new Fetched(r.getInt(4), r.getBytes(5)))
                      : Optional.empty();
              return Optional.of(
                  new Work(
                      job,
                      r.getString(1),
                      r.getDouble(7),
                      r.getInt(2),
                      stored,
                      Optional.ofNullable(r.getString(6))));
            }
          }
        });
  }

  /**
   * Extends the leases of the robots.txt rows {@code workerId} holds: a fetch may wait long for its
   * host's turn (a turn a minute at 1/60 s) and then for the answer.
   */
  public int extendLeases(String job, String workerId, long leaseMillis) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "UPDATE pacer_robots SET lease_until = now()"
                      + " + ? * interval '1 millisecond' WHERE job = ? AND state = 'fetching'"
                      + " AND leased_by = ?")) {
            s.setLong(1, leaseMillis);
            s.setString(2, job);
            s.setString(3, workerId);
            return s.executeUpdate();
          }
        });
  }

  /** Whether some host of the job has its robots.txt still to fetch or apply. */
  public boolean hasOpenHosts(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT EXISTS (SELECT 1 FROM pacer_robots"
                      + " WHERE job = ? AND state IN ('wanted', 'fetching', 'fetched'))")) {
            s.setString(1, job);
            try (ResultSet r = s.executeQuery()) {
              r.next();
              return r.getBoolean(1);
            }
          }
        });
  }

  /**
   * Applies a host's robots.txt, in one transaction: stores {@code fetched} (if it was just
   * fetched), skips the open items the settlement disallows, widens the host's interval to its
   * {@code minInterval} (rate and interval on the frontier row; the host's cursor row is pushed to
   * one {@code minInterval} from now, so the first item too keeps it after robots.txt) and opens
   * the host's gate. Returns how many items were skipped.
   */
  public int settle(Work work, Optional<Fetched> fetched, Settlement settlement)
      throws SQLException {
    return connection.transaction(
        c -> {
          if (fetched.isPresent()) {
            storeFetched(c, work, fetched.get());
          }
          int skipped = skipDisallowed(c, work, settlement);
          widenInterval(c, work, settlement.minInterval());
          endLease(c, work, "applied", settlement.verdict(), Duration.ZERO, false);
          return skipped;
        });
  }

  private static void storeFetched(Connection c, Work work, Fetched fetched) throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement(
            "UPDATE pacer_robots SET status = ?,"
                + " body = ?, fetched_at = now() WHERE job = ? AND host = ?")) {
      s.setInt(1, fetched.status());
      s.setBytes(2, fetched.body());
      s.setString(3, work.job());
      s.setString(4, work.host());
      s.executeUpdate();
    }
  }

  /** Skips the host's open items that the settlement disallows; returns how many. */
  private static int skipDisallowed(Connection c, Work work, Settlement settlement)
      throws SQLException {
    List<String> skipped = new ArrayList<>();
    try (PreparedStatement s =
        c.prepareStatement(
            "SELECT url_key, url FROM pacer_item"
                + " WHERE job = ? AND host = ? AND "
                + OPEN
                + " FOR UPDATE")) {
      s.setString(1, work.job());
      s.setString(2, work.host());
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          if (settlement.skip().test(r.getString(2))) {
            skipped.add(r.getString(1));
          }
        }
      }
    }
    if (!skipped.isEmpty()) {
      try (PreparedStatement s =
          c.prepareStatement(
              "UPDATE pacer_item SET state = 'skipped', last_error = ?, finished_at = now(),"
                  + " leased_by = NULL, lease_token = NULL, lease_until = NULL WHERE job = ?"
                  + " AND url_key = ANY (?) AND "
                  + OPEN)) {
        s.setString(1, settlement.reason());
        s.setString(2, work.job());
        s.setArray(3, c.createArrayOf("text", skipped.toArray()));
        s.executeUpdate();
      }
    }
    return skipped.size();
  }

  /**
   * Widens the host's interval on its frontier row to {@code minInterval}, and pushes its cursor
   * row to one {@code minInterval} from now.
   */
  private void widenInterval(Connection c, Work work, Duration minInterval) throws SQLException {
    long minMicros = minInterval.toNanos() / 1000;
    try (PreparedStatement s =
        c.prepareStatement(
            "UPDATE pacer_frontier SET interval_us = GREATEST(interval_us, ?), rate ="
                + " LEAST(rate, 1e6 / GREATEST(?, 1)), next_at = '-infinity' WHERE job = ?"
                + " AND host = ?")) {
      s.setLong(1, minMicros);
      s.setLong(2, minMicros);
      s.setString(3, work.job());
      s.setString(4, work.host());
      s.executeUpdate();
    }
    if (minMicros > 0) {
      // An upsert: robots.txt applied from a stored answer took no turn, so the row may be
      // missing (the claim would then heal it at now, and the delay would not hold).
      try (PreparedStatement s =
          c.prepareStatement(
              "INSERT INTO "
                  + cursors
                  + " AS k (name, next_at, updated_at) VALUES (?, clock_timestamp() + ? *"
                  + " interval '1 microsecond', clock_timestamp()) ON CONFLICT (name) DO"
                  + " UPDATE SET next_at = "
                  + PacerTableSql.heldUntil("k", "excluded.next_at"))) {
        s.setString(1, work.host());
        s.setLong(2, minMicros);
        s.executeUpdate();
      }
    }
  }

  /**
   * The host's robots.txt is to be fetched again after {@code after} (a throttled answer, a server
   * error or a network failure), {@code verdict} saying why; its items stay behind the gate.
   */
  public void retry(Work work, String verdict, Duration after) throws SQLException {
    connection.call(
        c -> {
          endLease(c, work, "wanted", verdict, after, true);
          return null;
        });
  }

  /**
   * Gives up on the host's robots.txt for this run: {@code verdict} says why. With {@code defer},
   * its open items are deferred to the next run (which fetches robots.txt again); without, they
   * stay pending and the host's gate opens, for a host the claim will find locked out.
   */
  public void giveUp(Work work, String verdict, boolean defer) throws SQLException {
    connection.transaction(
        c -> {
          if (defer) {
            update(
                c,
                "UPDATE pacer_item SET state = 'deferred', last_error = ?, leased_by = NULL,"
                    + " lease_token = NULL, lease_until = NULL WHERE job = ? AND host = ? AND "
                    + OPEN,
                DEFERRED,
                work.job(),
                work.host());
          }
          update(
              c,
              "UPDATE pacer_frontier SET next_at = '-infinity' WHERE job = ? AND host = ?",
              work.job(),
              work.host());
          endLease(c, work, "unavailable", verdict, Duration.ZERO, false);
          return null;
        });
  }

  /**
   * Items some claim could take once the gate opens: pending, or leased by a worker that died (in
   * an earlier run, before the gate was there) with the lease run out.
   */
  private static final String OPEN =
      "(state = 'pending' OR (state = 'leased' AND lease_until < now()))";

  /** The reason recorded on items deferred for want of their host's robots.txt. */
  static final String DEFERRED = "robots.txt unavailable";

  /**
   * Ends the lease of {@code work}'s row. The attempts are set, not added to, from those the claim
   * read (nobody else changes them while the row is leased), so that the statement made again
   * counts an attempt once. The verdict is kept redacted ({@link Secrets#redact}): it may quote a
   * failure's message, and the URL in it.
   */
  private static void endLease(
      Connection c, Work work, String state, String verdict, Duration after, boolean attempt)
      throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement(
            "UPDATE pacer_robots SET state = ?,"
                + " verdict = ?, leased_by = NULL, lease_until = NULL,"
                + " not_before = now() + ? * interval '1 microsecond', attempts = ?"
                + " WHERE job = ? AND host = ?")) {
      s.setString(1, state);
      s.setString(2, Secrets.redact(verdict));
      s.setLong(3, after.toNanos() / 1000);
      s.setInt(4, work.attempts() + (attempt ? 1 : 0));
      s.setString(5, work.job());
      s.setString(6, work.host());
      s.executeUpdate();
    }
  }

  /**
   * The job's hosts whose robots.txt kept items from being fetched, or could not be had: each with
   * its state, status, verdict and skipped items; the busiest first, at most {@code limit}.
   */
  public List<HostReport> report(String job, int limit) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT r.host, r.state, r.status, r.verdict, count(i.url_key) FROM pacer_robots"
                      + " r LEFT JOIN pacer_item i ON i.job = r.job AND i.host = r.host  AND"
                      + " i.state = 'skipped' WHERE r.job = ? GROUP BY r.host, r.state, r.status,"
                      + " r.verdict HAVING count(i.url_key) > 0 OR r.state = 'unavailable' ORDER BY"
                      + " count(i.url_key) DESC, r.host LIMIT ?")) {
            s.setString(1, job);
            s.setInt(2, limit);
            List<HostReport> out = new ArrayList<>();
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                int status = r.getInt(3);
                out.add(
                    new HostReport(
                        r.getString(1),
                        r.getString(2),
                        r.wasNull() ? null : status,
                        r.getString(4),
                        r.getLong(5)));
              }
            }
            return out;
          }
        });
  }

  /** How many of the job's hosts have had their robots.txt read (applied) and given up on. */
  public record Counts(long applied, long unavailable) {}

  public Counts counts(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT count(*) FILTER (WHERE state = 'applied'), count(*) FILTER (WHERE state ="
                      + " 'unavailable') FROM pacer_robots WHERE job = ?")) {
            s.setString(1, job);
            try (ResultSet r = s.executeQuery()) {
              r.next();
              return new Counts(r.getLong(1), r.getLong(2));
            }
          }
        });
  }

  private static int update(Connection c, String sql, String... params) throws SQLException {
    try (PreparedStatement s = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        s.setString(i + 1, params[i]);
      }
      return s.executeUpdate();
    }
  }
}
