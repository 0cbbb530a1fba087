package dev.pacer.cli.db;

import dev.pacer.TimeSource;
import dev.pacer.cli.db.ItemStore.Item;
import dev.pacer.cli.model.Secrets;
import dev.pacer.postgres.DatabaseClock;
import dev.pacer.postgres.KeptConnection;
import dev.pacer.postgres.PacerTableSql;
import dev.pacer.postgres.internal.ConcurrentCreate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The frontier of a job in per-host mode ({@code pacer fetch --per-host}): every host of the job is
 * its own destination, and claiming an item <em>is</em> reserving its host's turn.
 *
 * <h2>Rows</h2>
 *
 * {@code pacer_frontier} holds one row per (job, host): the host's ceiling for this job ({@code
 * rate}, {@code interval_us}), its fleet-wide cap on items in flight ({@code max_in_flight}),
 * whether it may still have work ({@code active}), and {@code next_at}, a copy of where the host's
 * cursor stood after this job's last claim on it. The copy only orders the frontier; the cursor
 * itself is the host's row in the cursors' table (Pacer's layout: {@code pacer_cursor} unless
 * {@code --cursor-table} names another), keyed by the host name: the very row a {@code
 * --destination HOST} run or any library client paces on, so a host has one ceiling whichever job,
 * mode or program fetches it. An item's host is {@code pacer_item.host}.
 *
 * <h2>The claim is one statement ({@link #claim})</h2>
 *
 * <ol>
 *   <li>{@code pick}: the job's active frontier rows, in {@code next_at} order on the index {@code
 *       (job, next_at) WHERE active}, whose copy says the turn starts within the {@linkplain
 *       #HORIZON horizon}, which have a claimable item (pending and due, or leased with its lease
 *       run out: the first in input order, on the index {@code (job, host, seq)}), and fewer than
 *       {@code max_in_flight} items leased (the index {@code (job, host) WHERE state = 'leased'});
 *       the first such row is locked {@code FOR UPDATE SKIP LOCKED}, so concurrent claims take
 *       different hosts and never wait for each other;
 *   <li>{@code turn}: the library's reservation on the host's {@code pacer_cursor} row, term by
 *       term as {@link PacerTableSql} writes it: {@code next = max(now, next) + interval × backoff}
 *       on {@code clock_timestamp()} (the database's clock), as an {@code INSERT … ON CONFLICT DO
 *       UPDATE} whose WHERE refuses a turn that would start beyond the horizon, leaving the row
 *       exactly as it was (a refused claim consumes nothing). A missing row heals: it is inserted
 *       with the turn at the later of now and the frontier's copy (where this job last saw the
 *       turns end). An implausible row (further ahead than the larger of two minutes and 64
 *       intervals, of now and of the end of its pause, a pause counted at most a day: {@link
 *       PacerTableSql#turnStart}'s rule) is reset the same way, with a WARN naming how far ahead
 *       the turn found it. A host with a lockout row ({@code pacer_cursor_lockout}) gets no turn. A
 *       {@code Retry-After} pause needs no check of its own: it pushed the cursor row itself
 *       ({@code PostgresCursor.pause}), so the host's turns are refused until it ends, while other
 *       hosts' claims go on at full pace;
 *   <li>{@code lease}: the item is leased, only if the turn was granted;
 *   <li>{@code front}: the frontier's copy is set to the host's new {@code next_at}; after a
 *       refusal, to the cursor's own value, so the host sorts where its turn really is; after a
 *       lockout, to {@code infinity}, so this job's claims pass over it until the next run.
 * </ol>
 *
 * A host whose robots.txt is still to be read ({@code --robots}) stands at {@code infinity} too,
 * behind a gate that {@link RobotsStore} opens: the claim needs no term of its own for it.
 *
 * <p>When nothing is eligible the claim <em>awaits</em> a turn: it marks the soonest host whose
 * coming turn no other claimant awaits ({@code awaited_at}, the turn it awaits, and {@code
 * awaited_by}, the claimant: a fetch thread; locked {@code SKIP LOCKED} as the pick is), and
 * answers how long until half the horizon before that turn ({@code wake_micros}). Until that turn
 * starts, it is its claimant's: other claims pass over it, as over a host at its in-flight cap. So
 * one thread of the whole fleet wakes for each turn and claims it alone, where every idle thread
 * would otherwise wake for the soonest one, and all but one of them come back empty, or take a turn
 * its claimant is about to claim and leave that claimant to come back empty. The mark names the
 * turn, so it lapses by itself when the host's turn moves; once the turn has started, any claim may
 * take it, so a claimant that dies or wakes late costs its host no more than that. When every
 * coming turn is awaited already, the answer is one horizon after the soonest turn: by then its
 * claimant has taken it; if it has not, this claim takes the turn one horizon late. The statement
 * also answers whether some host is due but held (every item leased up to its cap, waiting for a
 * retry time, or its turn awaited by another claimant), for which no time is known.
 *
 * <p>No worker ever holds an item whose turn is far away: an item is leased only with its host's
 * turn starting within the horizon. A skewed backlog therefore cannot block the other hosts: a host
 * with 1,000 items waits for its own turns while the claims take every other host's turns as they
 * come.
 *
 * <p>The in-flight cap is counted from the statement's snapshot: two claims racing for one host's
 * row (the second locks it just after the first commits) may each miss the other's lease, so the
 * cap can be passed by one for as long as both items are in flight. Two claims racing for the same
 * item are settled by the lease's own check of the item's state: the loser leases nothing and
 * answers {@link Claim.Lost}, having consumed one turn of that host (under-pacing, never over).
 *
 * <p>One item per claim. Claiming several items of one host at once would lease items whose turns
 * lie intervals ahead (the head-of-line blocking this design exists to avoid); several hosts per
 * claim would need one cursor row locked per host in one statement for little gain, since the
 * claim's cost is one round trip against a turn of at least the host's interval.
 */
public final class FrontierStore {

  private static final Logger log = LoggerFactory.getLogger(FrontierStore.class);

  /**
   * An item is leased only if its host's turn starts within this: the longest sleep after a claim.
   * An idle thread is woken half of it before the next host's turn, so that its claim lands before
   * the turn and the turn starts on the host's grid ({@code max(now, next)} is then {@code next}):
   * a claim that landed after it would start the turn late and push every later turn of the host by
   * as much, so that a busy machine would deliver a host less than its ceiling.
   */
  public static final Duration HORIZON = Duration.ofMillis(50);

  /** The least a cursor may stand ahead before it is treated as implausible and reset. */
  static final Duration RESET_FLOOR = Duration.ofMinutes(2);

  /** The outcome of one claim. */
  public sealed interface Claim {
    /**
     * An item leased with its host's turn, which starts {@code turnIn} after the statement's answer
     * (negative: it began that long before the answer, the statement having been slow), spaced from
     * the next by the host's interval times {@code backoff} (the fleet's multiplier kept on the
     * host's cursor row).
     */
    record Claimed(Item item, String host, double rate, Duration turnIn, int backoff)
        implements Claim {}

    /**
     * Nothing could be claimed now. {@code wake}: how long until a claim can take the turn this
     * claim awaits (half the {@linkplain #HORIZON horizon} before it; one horizon after the soonest
     * turn if every coming turn is awaited already), if any host is waiting for one; {@code held}:
     * some host is due but held (its items all leased up to its cap, or waiting for a retry time,
     * or its turn awaited by another claimant, or its row locked by another claim), for which no
     * time is known; {@code contended}: some host could have been claimed, but another claim had
     * its row locked (the case of {@code held} that is a claim wasted while a host was eligible).
     */
    record Idle(java.util.Optional<Duration> wake, boolean held, boolean contended)
        implements Claim {}

    /** A host was picked but gave no turn: its cursor is ahead of the copy (healed), or ahead. */
    record Refused(String host) implements Claim {}

    /** The picked host is locked out; its items stay pending. */
    record LockedOut(String host, String reason) implements Claim {}

    /** The host's turn was taken but another claim leased the item first. */
    record Lost(String host) implements Claim {}
  }

  /** An item leased ahead ({@link #leaseAhead}), its host, and the host's rate for the job. */
  public record Ahead(Item item, String host, double rate) {}

  /** A host's ceiling for a job: requests per second and items in flight across the fleet. */
  public record HostCeiling(double rate, int maxInFlight) {}

  private final StoreConnection connection;

  /** The cursors' table: the place's, in Pacer's layout (per-host mode refuses any other). */
  private final String cursors;

  private final String claim;
  private final DatabaseClock clock;
  private final TimeSource time;

  /**
   * The tokens of this worker's claims and fills whose answers were lost with their connection:
   * items may be leased under them that none of its threads holds. {@link #settleLostLeases}
   * settles them.
   */
  private final Set<String> unsettled = ConcurrentHashMap.newKeySet();

  FrontierStore(StoreConnection connection, CursorPlace place, DatabaseClock clock) {
    this(connection, place, clock, TimeSource.SYSTEM);
  }

  /**
   * A frontier whose claims are timed on {@code time}: {@link System#nanoTime()}'s clock, as {@code
   * clock} maps it, read through a {@link TimeSource} so that a test can tell the instant a claim's
   * answer came back, which its turn is counted from.
   */
  FrontierStore(
      StoreConnection connection, CursorPlace place, DatabaseClock clock, TimeSource time) {
    this.connection = connection;
    this.clock = clock;
    this.time = time;
    this.cursors = place.table();
    this.claim = FrontierClaimSql.claim(cursors);
  }

  /**
   * Makes the job's hosts its frontier: each host's ceiling is set (an earlier run's is replaced),
   * and every row of the job becomes active and due (the cursor rows decide the real turns), its
   * failure bar cleared (a host passed over by an earlier run is tried again). The items know their
   * hosts from the enqueue.
   */
  public void plan(String job, Map<String, HostCeiling> ceilings) throws SQLException {
    connection.call(
        c -> {
          // The claim reserves on the cursors' rows, so their table must exist before the first
          // claim, whether or not a cursor of this process made it; runs starting together on a
          // new database race to create it.
          try (java.sql.Statement s = c.createStatement()) {
            ConcurrentCreate.execute(s, PacerTableSql.createTable(cursors));
          }
          return null;
        });
    connection.transaction(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "INSERT INTO pacer_frontier (job, host, rate, interval_us, max_in_flight)"
                      + " VALUES (?, ?, ?, ?, ?) ON CONFLICT (job, host) DO UPDATE SET"
                      + " rate = excluded.rate, interval_us = excluded.interval_us,"
                      + " max_in_flight = excluded.max_in_flight")) {
            int batched = 0;
            for (Map.Entry<String, HostCeiling> e : ceilings.entrySet()) {
              s.setString(1, job);
              s.setString(2, e.getKey());
              s.setDouble(3, e.getValue().rate());
              s.setLong(4, intervalMicros(e.getValue().rate()));
              s.setInt(5, e.getValue().maxInFlight());
              s.addBatch();
              if (++batched % 1000 == 0) {
                s.executeBatch();
              }
            }
            s.executeBatch();
          }
          try (PreparedStatement s =
              c.prepareStatement(
                  "UPDATE pacer_frontier SET active = true, next_at = '-infinity', bar_items = 0,"
                      + " bar_failures = 0, passed_over = NULL WHERE job = ?")) {
            s.setString(1, job);
            s.executeUpdate();
          }
          return null;
        });
    connection.call(
        c -> {
          // The claim's plan depends on the statistics: planned while they still describe the
          // tables
          // before this enqueue (a job of "one row"), it reads every item of the job through the
          // wrong index for every host, orders of magnitude slower than the plan made once the
          // tables are analysed. Autovacuum would analyse only later.
          try (java.sql.Statement s = c.createStatement()) {
            s.execute("ANALYZE pacer_item, pacer_frontier");
          }
          return null;
        });
  }

  /** A host's interval in whole microseconds, as the library rounds it ({@code Destination}). */
  static long intervalMicros(double rate) {
    return Math.max(1, Math.round(1e6 / rate));
  }

  /**
   * Claims an item whose host's turn starts within the {@link #HORIZON}: one statement. {@code
   * claimant} names the calling fetch thread (unique in the fleet): a turn an idle claim awaited is
   * its claimant's until it starts.
   *
   * <p>Made at most once: made again, it would take a second turn and lease a second item. When its
   * answer is lost ({@link KeptConnection#OUTCOME_UNKNOWN}), the item it may have leased is left to
   * {@link #settleLostLeases}, which the caller makes before it records anything, and the caller
   * claims afresh: the turn the lost claim may have taken is spent (the host gets one request
   * fewer, never one more).
   */
  public Claim claim(String job, String workerId, String claimant, long leaseMillis)
      throws SQLException {
    return claim(job, workerId, claimant, List.of(), true, leaseMillis, HORIZON);
  }

  /**
   * {@link #claim}, which may also take an item the worker leased ahead ({@link #leaseAhead}) at
   * its host's turn, unless {@code held} names its lease token: the tokens of the items the
   * worker's threads hold now (one taken from the buffer while PostgreSQL was away, among them).
   * Unless {@code settled} (no return from an outage lately), it takes no item whose lease ran out.
   */
  public Claim claim(
      String job,
      String workerId,
      String claimant,
      Collection<String> held,
      boolean settled,
      long leaseMillis)
      throws SQLException {
    return claim(job, workerId, claimant, held, settled, leaseMillis, HORIZON);
  }

  /** {@link #claim}, leasing an item only if its host's turn starts within {@code horizon}. */
  Claim claim(
      String job,
      String workerId,
      String claimant,
      Collection<String> held,
      boolean settled,
      long leaseMillis,
      Duration horizon)
      throws SQLException {
    String token = UUID.randomUUID().toString();
    try {
      return claimOnce(job, workerId, claimant, held, settled, token, leaseMillis, horizon);
    } catch (SQLException e) {
      if (KeptConnection.isOutcomeUnknown(e)) {
        unsettled.add(token);
      }
      throw e;
    }
  }

  private Claim claimOnce(
      String job,
      String workerId,
      String claimant,
      Collection<String> held,
      boolean settled,
      String token,
      long leaseMillis,
      Duration horizon)
      throws SQLException {
    return connection.callOnce(
        c -> {
          try (PreparedStatement s = c.prepareStatement(claim)) {
            FrontierClaimSql.bindClaim(
                s, job, claimant, workerId, held, settled, token, leaseMillis, horizon);
            long asked = time.nanoTime();
            try (ResultSet r = s.executeQuery()) {
              long answered = time.nanoTime();
              r.next();
              String host = r.getString(5);
              if (host == null) {
                long wake = r.getLong(9);
                boolean none = r.wasNull();
                // NULL (no active host, no eligible one) reads as false
                return new Claim.Idle(
                    none
                        ? java.util.Optional.<Duration>empty()
                        : java.util.Optional.of(Duration.ofNanos(Math.max(0, wake) * 1000)),
                    r.getBoolean("held"),
                    r.getBoolean("contended"));
              }
              String lockout = r.getString(8);
              if (lockout != null) {
                return new Claim.LockedOut(host, lockout);
              }
              long resetFromMicros = r.getLong("reset_from_micros");
              if (!r.wasNull()) {
                log.warn(
                    "Cursor {} was {} s ahead of the database clock (bound {}); reset",
                    host,
                    resetFromMicros / 1_000_000,
                    Duration.ofNanos(r.getLong("reset_beyond_micros") * 1000));
              }
              long waitMicros = r.getLong(7);
              if (r.wasNull()) {
                return new Claim.Refused(host);
              }
              long turnIn =
                  clock.waitFromAnswer(
                      asked,
                      answered,
                      r.getLong("now_micros") * 1000,
                      Math.max(0, waitMicros) * 1000);
              String key = r.getString(1);
              if (key == null) {
                return new Claim.Lost(host);
              }
              Item item = new Item(job, key, r.getString(2), r.getInt(3), r.getInt(4), token);
              return new Claim.Claimed(
                  item, host, r.getDouble(6), Duration.ofNanos(turnIn), r.getInt("backoff"));
            }
          }
        });
  }

  /**
   * Leases ahead, for {@code workerId}'s buffer (per-host mode's {@code LeasedAhead}), a pending
   * due item for each of {@code tokens}, spread over the job's hosts a claim may reach (active, not
   * locked out, not passed over, their robots.txt settled), the hosts whose turns come soonest
   * first: every host's first item before any host's second, each host's in input order, and at
   * most {@code perHostSeconds} times the host's rate (rounded up) of a host's items leased ahead
   * by this worker at once. Such an item is not in flight ({@code ahead}: a host's in-flight cap
   * does not count it), and only this worker's claims take it, at its host's turn ({@link #claim}).
   * Answers the items leased, with their tokens, hosts and hosts' rates.
   *
   * <p>Made at most once: made again, it would lease a second item under a token. When its answer
   * is lost, the items it may have leased are left to {@link #settleLostLeases}.
   */
  public List<Ahead> leaseAhead(
      String job, String workerId, List<String> tokens, long leaseMillis, double perHostSeconds)
      throws SQLException {
    if (tokens.isEmpty()) {
      return List.of();
    }
    try {
      return connection.callOnce(
          c -> {
            try (PreparedStatement s = c.prepareStatement(leaseAheadSql())) {
              s.setString(1, job);
              s.setString(2, workerId);
              s.setArray(3, c.createArrayOf("text", tokens.toArray()));
              s.setDouble(4, perHostSeconds);
              s.setLong(5, leaseMillis);
              List<Ahead> leased = new ArrayList<>();
              try (ResultSet r = s.executeQuery()) {
                while (r.next()) {
                  Item item =
                      new Item(
                          job,
                          r.getString(1),
                          r.getString(2),
                          r.getInt(3),
                          r.getInt(4),
                          r.getString(5));
                  leased.add(new Ahead(item, r.getString(6), r.getDouble(7)));
                }
              }
              return leased;
            }
          });
    } catch (SQLException e) {
      if (KeptConnection.isOutcomeUnknown(e)) {
        unsettled.addAll(tokens);
      }
      throw e;
    }
  }

  /** The statement of {@link #leaseAhead}. */
  private String leaseAheadSql() {
    return "WITH p AS MATERIALIZED (SELECT now() AS now, ?::text AS job, ?::text AS worker,"
        + "   ?::text[] AS tokens, ?::float8 AS seconds),"
        + " room AS MATERIALIZED (SELECT f.host, f.rate, ceil(p.seconds * f.rate)::int"
        + "   - (SELECT count(*) FROM pacer_item a WHERE a.job = f.job AND a.host = f.host"
        + "       AND a.state = 'leased' AND a.ahead AND a.leased_by = p.worker) AS room"
        + "   FROM pacer_frontier f CROSS JOIN p"
        + "   WHERE f.job = p.job AND f.active AND f.next_at < 'infinity'"
        + "     AND f.passed_over IS NULL"
        + "     AND NOT EXISTS (SELECT 1 FROM "
        + cursors
        + "_lockout l WHERE l.name = f.host)"
        + "   ORDER BY f.next_at LIMIT cardinality((SELECT tokens FROM p))),"
        + " cand AS (SELECT i.job, i.url_key, i.seq, r.host, r.rate,"
        + "     row_number() OVER (PARTITION BY r.host ORDER BY i.seq) AS n"
        + "   FROM room r CROSS JOIN LATERAL (SELECT it.job, it.url_key, it.seq FROM pacer_item it"
        + "     WHERE it.job = (SELECT job FROM p) AND it.host = r.host AND it.state = 'pending'"
        + "       AND it.not_before <= (SELECT now FROM p)"
        + "     ORDER BY it.seq LIMIT GREATEST(r.room, 0) FOR UPDATE SKIP LOCKED) i),"
        + " picked AS (SELECT job, url_key, host, rate,"
        + "   row_number() OVER (ORDER BY n, seq) AS k FROM cand"
        + "   ORDER BY n, seq LIMIT cardinality((SELECT tokens FROM p))),"
        + " given AS (SELECT u.t, u.k FROM p, unnest(p.tokens) WITH ORDINALITY AS u(t, k))"
        + " UPDATE pacer_item i SET state = 'leased', ahead = true,"
        + "   leased_by = (SELECT worker FROM p), lease_token = g.t,"
        + "   lease_until = (SELECT now FROM p) + ? * interval '1 millisecond'"
        + " FROM picked n JOIN given g ON g.k = n.k"
        + " WHERE i.job = n.job AND i.url_key = n.url_key AND i.state = 'pending'"
        + " RETURNING i.url_key, i.url, i.failures, i.throttles, i.lease_token, n.host, n.rate";
  }

  /** Whether a claim or a fill lost its answer: see {@link #settleLostLeases}. */
  public boolean hasUnsettledLeases() {
    return !unsettled.isEmpty();
  }

  /** An item a worker holds, under the token it holds it by, and whether it is in its buffer. */
  public record Holding(String token, boolean buffered) {}

  /**
   * Settles the leases of the claims and fills whose answers were lost: an item this worker holds
   * under a token of its own ({@code holding}, by key: in its buffer, or taken from it to fetch
   * since) is leased to that token again, so that its outcome is recorded and it is fetched once;
   * any other goes back to the job. A lost claim's item is not given back at once: the claim may
   * have taken an item of this worker's buffer, which a thread may take to fetch before anything is
   * answered again, and an item given back meanwhile could be claimed and fetched by another worker
   * as well. Its caller makes it before it records anything. Made again (its answer lost), it finds
   * nothing left to settle. Answers how many items it gave back.
   */
  public int settleLostLeases(String job, Map<String, Holding> holding) throws SQLException {
    List<String> lost = List.copyOf(unsettled);
    if (lost.isEmpty()) {
      return 0;
    }
    List<String> keys = new ArrayList<>(holding.size());
    List<String> tokens = new ArrayList<>(holding.size());
    List<Boolean> buffered = new ArrayList<>(holding.size());
    holding.forEach(
        (key, h) -> {
          keys.add(key);
          tokens.add(h.token());
          buffered.add(h.buffered());
        });
    int givenBack =
        connection.call(
            c -> {
              try (PreparedStatement s = c.prepareStatement(SETTLE_LOST_LEASES)) {
                s.setArray(1, c.createArrayOf("text", keys.toArray()));
                s.setArray(2, c.createArrayOf("text", tokens.toArray()));
                s.setArray(3, c.createArrayOf("bool", buffered.toArray()));
                s.setString(4, job);
                s.setArray(5, c.createArrayOf("text", lost.toArray()));
                s.setString(6, job);
                s.setArray(7, c.createArrayOf("text", lost.toArray()));
                try (ResultSet r = s.executeQuery()) {
                  r.next();
                  return r.getInt(1);
                }
              }
            });
    unsettled.removeAll(lost);
    return givenBack;
  }

  // In one statement both updates read the rows as they were: the second leaves those the first
  // leased again.
  private static final String SETTLE_LOST_LEASES =
      "WITH h AS (SELECT * FROM unnest(?::text[], ?::text[], ?::boolean[])"
          + "   AS h(url_key, token, buffered)),"
          + " kept AS (UPDATE pacer_item i SET lease_token = h.token, ahead = h.buffered"
          + "   FROM h WHERE i.job = ? AND i.url_key = h.url_key AND i.state = 'leased'"
          + "     AND i.lease_token = ANY (?::text[])"
          + "   RETURNING i.url_key),"
          + " given AS (UPDATE pacer_item SET state = 'pending', ahead = false,"
          + "     leased_by = NULL, lease_token = NULL, lease_until = NULL"
          + "   WHERE job = ? AND state = 'leased' AND lease_token = ANY (?::text[])"
          + "     AND url_key NOT IN (SELECT url_key FROM kept)"
          + "   RETURNING url_key)"
          + " SELECT count(*) FROM given";

  /**
   * Those of {@code hosts} no claim of the job reaches any more: locked out, or passed over (their
   * frontier rows stand at {@code infinity}), or with a lockout row.
   */
  public java.util.Set<String> barredHosts(String job, java.util.Set<String> hosts)
      throws SQLException {
    if (hosts.isEmpty()) {
      return java.util.Set.of();
    }
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT f.host FROM pacer_frontier f WHERE f.job = ? AND f.host = ANY (?::text[])"
                      + " AND (f.next_at = 'infinity' OR f.passed_over IS NOT NULL"
                      + "   OR EXISTS (SELECT 1 FROM "
                      + cursors
                      + "_lockout l WHERE l.name = f.host))")) {
            s.setString(1, job);
            s.setArray(2, c.createArrayOf("text", hosts.toArray()));
            java.util.Set<String> barred = new java.util.HashSet<>();
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                barred.add(r.getString(1));
              }
            }
            return barred;
          }
        });
  }

  /**
   * Hosts of the job with no open item left leave the frontier's index ({@code active} false), so
   * that claims stop stepping over them. Rows locked by a claim just now are left for next time.
   */
  public int retireDrainedHosts(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "UPDATE pacer_frontier f SET active = false WHERE (f.job, f.host) IN ("
                      + " SELECT g.job, g.host FROM pacer_frontier g WHERE g.job = ? AND g.active"
                      + " AND NOT EXISTS (SELECT 1 FROM pacer_item i WHERE i.job = g.job"
                      + "   AND i.host = g.host AND i.state IN ('pending', 'leased'))"
                      + " FOR UPDATE SKIP LOCKED)")) {
            s.setString(1, job);
            return s.executeUpdate();
          }
        });
  }

  /**
   * Counts clean answers heard with claimed turns on their hosts' cursor rows, as the library's
   * reservation under the fleet's backoff counts those reported with it: at 100 since the last
   * rate-pressure answer the host's multiplier halves. Only rows backed off are touched. Made at
   * most once: made again, it would count them twice.
   */
  public int countCleanAnswers(Map<String, Integer> cleanByHost) throws SQLException {
    if (cleanByHost.isEmpty()) {
      return 0;
    }
    return connection.callOnce(
        c -> {
          try (PreparedStatement s = c.prepareStatement(PacerTableSql.countCleanAnswers(cursors))) {
            s.setArray(1, c.createArrayOf("text", cleanByHost.keySet().toArray()));
            s.setArray(2, c.createArrayOf("integer", cleanByHost.values().toArray()));
            return s.executeUpdate();
          }
        });
  }

  /**
   * Items of one host counted against its failure bar (each once, at its first attempt): how many,
   * how many of them failed, and the last failure's message, if any failed.
   */
  public record HostItems(int items, int failures, String lastFailure) {}

  /** A host passed over, and why. */
  public record PassedOver(String host, String reason) {}

  /**
   * Adds {@code counted} (by host) to the hosts' failure bars, and passes over every host whose bar
   * is crossed: {@code maxFailures} failed among the items of its window, a window that holds up to
   * {@code window} items and then starts again. A host passed over is out of this run: its frontier
   * row stands at {@code infinity}, where no claim reaches it, its bar is no longer counted, and
   * its pending items are deferred to the next run, {@code last_error} saying why. Answers the
   * hosts passed over by this call. The bar is the fleet's, on the frontier row: every worker adds
   * what its threads counted. Made at most once: made again, it would count the items twice, and
   * could pass over a host for failures it counted twice. The last failure's message is kept
   * redacted ({@link Secrets#redact}).
   */
  public List<PassedOver> countItems(
      String job, Map<String, HostItems> counted, int window, int maxFailures) throws SQLException {
    if (counted.isEmpty()) {
      return List.of();
    }
    String sql = countItemsSql(window, maxFailures);
    List<String> hosts = new ArrayList<>(new TreeMap<>(counted).keySet());
    return connection.transactionOnce(
        c -> {
          List<PassedOver> passed = addToBars(c, sql, job, hosts, counted);
          if (!passed.isEmpty()) {
            defer(c, job, passed.stream().map(PassedOver::host).toList());
          }
          return passed;
        });
  }

  /** The update of the failure bars, for {@link #countItems}. */
  private static String countItemsSql(int window, int maxFailures) {
    String restart = "f.bar_items >= " + window;
    String items = "CASE WHEN " + restart + " THEN u.items ELSE f.bar_items + u.items END";
    String failures =
        "CASE WHEN " + restart + " THEN u.failures" + " ELSE f.bar_failures + u.failures END";
    String crossed = "(" + failures + ") >= " + maxFailures;
    // Every term reads the row as it is when this statement updates it (after another worker's
    // update of it has committed), so that two workers' counts add up.
    return "UPDATE pacer_frontier f SET bar_items = "
        + items
        + ", bar_failures = "
        + failures
        + ", passed_over = CASE WHEN "
        + crossed
        + " THEN format('%s of its last %s item(s)"
        + " failed (bar: "
        + maxFailures
        + " of "
        + window
        + "); the last: %s', "
        + failures
        + ", "
        + items
        + ", u.last_failure) END,"
        + " next_at = CASE WHEN "
        + crossed
        + " THEN 'infinity'::timestamptz ELSE f.next_at END"
        + " FROM unnest(?::text[], ?::integer[], ?::integer[], ?::text[])"
        + "   AS u(host, items, failures, last_failure)"
        + " WHERE f.job = ? AND f.host = u.host AND f.passed_over IS NULL"
        + " RETURNING f.host, f.passed_over";
  }

  /** Adds the counts to the hosts' bars; answers the hosts whose bar this crossed. */
  private static List<PassedOver> addToBars(
      Connection c, String sql, String job, List<String> hosts, Map<String, HostItems> counted)
      throws SQLException {
    List<PassedOver> passed = new ArrayList<>();
    try (PreparedStatement s = c.prepareStatement(sql)) {
      s.setArray(1, c.createArrayOf("text", hosts.toArray()));
      s.setArray(
          2, c.createArrayOf("integer", hosts.stream().map(h -> counted.get(h).items()).toArray()));
      s.setArray(
          3,
          c.createArrayOf("integer", hosts.stream().map(h -> counted.get(h).failures()).toArray()));
      s.setArray(
          4,
          c.createArrayOf(
              "text",
              hosts.stream().map(h -> Secrets.redact(counted.get(h).lastFailure())).toArray()));
      s.setString(5, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          if (r.getString(2) != null) {
            passed.add(new PassedOver(r.getString(1), r.getString(2)));
          }
        }
      }
    }
    return passed;
  }

  /**
   * Defers the pending items of the job's hosts passed over: an item whose attempt was in flight
   * when its host was passed over comes back pending, at a host no claim reaches. Answers how many.
   */
  public int deferPassedOver(String job) throws SQLException {
    return connection.call(c -> defer(c, job, null));
  }

  /** Defers the pending items of the job's hosts passed over, of {@code hosts} if given. */
  private static int defer(Connection c, String job, List<String> hosts) throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement(
            "UPDATE pacer_item i SET state = 'deferred', last_error = 'host passed over: '"
                + " || f.passed_over FROM pacer_frontier f"
                + " WHERE f.job = ? AND f.passed_over IS NOT NULL"
                + (hosts == null ? "" : " AND f.host = ANY (?)")
                + " AND i.job = f.job AND i.host = f.host AND i.state = 'pending'")) {
      s.setString(1, job);
      if (hosts != null) {
        s.setArray(2, c.createArrayOf("text", hosts.toArray()));
      }
      return s.executeUpdate();
    }
  }

  /**
   * Whether the job still has work some claim may take: an open item of a host that is not locked
   * out for this run; with {@code robots} ({@code --robots}), also a host whose robots.txt is still
   * to be fetched or applied (its items wait behind the gate: see {@link RobotsStore}).
   */
  public boolean hasClaimableWork(String job, boolean robots) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT EXISTS (SELECT 1 FROM pacer_frontier f WHERE f.job = ? AND f.active AND"
                      + " f.next_at < 'infinity' AND EXISTS (SELECT 1 FROM pacer_item i   WHERE"
                      + " i.job = f.job AND i.host = f.host AND i.state IN ('pending', 'leased')))"
                      + (robots
                          ? " OR EXISTS (SELECT 1 FROM pacer_robots r WHERE r.job = ?"
                              + " AND r.state IN ('wanted', 'fetching', 'fetched'))"
                          : ""))) {
            s.setString(1, job);
            if (robots) {
              s.setString(2, job);
            }
            try (ResultSet r = s.executeQuery()) {
              r.next();
              return r.getBoolean(1);
            }
          }
        });
  }

  /** The hosts of the job passed over as locked out, with their open items. */
  public Map<String, Long> lockedOutHosts(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT f.host, count(i.url_key) FROM pacer_frontier f JOIN "
                      + cursors
                      + "_lockout l ON l.name = f.host LEFT JOIN pacer_item i ON i.job = f.job AND"
                      + " i.host = f.host AND i.state IN ('pending', 'leased') WHERE f.job = ?"
                      + " GROUP BY f.host ORDER BY f.host")) {
            s.setString(1, job);
            Map<String, Long> out = new java.util.LinkedHashMap<>();
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                out.put(r.getString(1), r.getLong(2));
              }
            }
            return out;
          }
        });
  }
}
