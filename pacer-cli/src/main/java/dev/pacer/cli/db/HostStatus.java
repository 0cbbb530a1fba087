package dev.pacer.cli.db;

import dev.pacer.postgres.PacerTableSql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * The hosts of a per-host job as {@code pacer status} shows them: which are held back (paused by a
 * {@code Retry-After}, or backed off), which are locked out or passed over, and where the backlog
 * is. Read only.
 *
 * <p>A job may have tens of thousands of hosts, so every answer is the first {@code top} rows and
 * the count of all of them, and every statement reads through an index on the job: its frontier
 * rows on {@code pacer_frontier}'s key {@code (job, host)}, its open items on {@code
 * pacer_item_host_open (job, host, seq)}, which the backlog counts host by host without reading the
 * items themselves (once over the job's open items, never once per host). The cursors' and
 * lockouts' tables, one row per destination, are joined to the job's hosts whole: read once, not
 * once per host (docs/cli.md gives the plans' figures at 10,000 hosts).
 */
public final class HostStatus {

  /** A job's frontier: how many hosts, and the sum of their ceilings (requests per second). */
  public record Frontier(int hosts, double ceilingSum) {

    public boolean perHost() {
      return hosts > 0;
    }
  }

  /**
   * A host whose turns are held back: paused for {@code pauseSeconds} more by the host's {@code
   * Retry-After} (0 if not paused), and spaced {@code backoff} times its interval (1 if not backed
   * off).
   */
  public record HeldHost(String host, double pauseSeconds, int backoff) {}

  /**
   * The first held-back hosts (longest pause first), of {@code hosts}, {@code paused} of them
   * paused.
   */
  public record HeldBack(List<HeldHost> top, int hosts, int paused) {}

  /** A host locked out since {@code since}, for {@code reason}, with its open items passed over. */
  public record LockedHost(String host, String reason, String since, long open) {}

  /**
   * The first locked-out hosts (latest first), of {@code hosts}, whose open items total {@code
   * open}.
   */
  public record LockedOut(List<LockedHost> top, int hosts, long open) {}

  /** The first hosts passed over by their failure bar (by name), of {@code hosts}. */
  public record PassedOver(List<FrontierStore.PassedOver> top, int hosts) {}

  /**
   * A host's open items (pending or leased) and its ceiling, if the job has one for it: at that
   * ceiling they take at least {@code open / rate} seconds.
   */
  public record HostBacklog(String host, long open, OptionalDouble rate) {

    public OptionalDouble drainSeconds() {
      return rate.isPresent()
          ? OptionalDouble.of(open / rate.getAsDouble())
          : OptionalDouble.empty();
    }
  }

  /**
   * The hosts with the most open items, of {@code hosts} with any, {@code open} in all, and the
   * host slowest to drain at its ceiling: the least time the job can still take.
   */
  public record Backlog(
      List<HostBacklog> top, int hosts, long open, Optional<HostBacklog> slowest) {}

  private final StoreConnection connection;
  private final String cursors;

  HostStatus(StoreConnection connection, CursorPlace place) {
    this.connection = connection;
    this.cursors = place.table();
  }

  /** The job's frontier; {@link Frontier#perHost()} is false for a single-destination job. */
  public Frontier frontier(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT count(*), coalesce(sum(rate), 0) FROM pacer_frontier WHERE job = ?")) {
            s.setString(1, job);
            try (ResultSet r = s.executeQuery()) {
              r.next();
              return new Frontier(r.getInt(1), r.getDouble(2));
            }
          }
        });
  }

  /** The job's hosts paused or backed off now, from their cursor rows. */
  public HeldBack heldBack(String job, int top) throws SQLException {
    return connection.call(
        c -> {
          List<HeldHost> rows = new ArrayList<>();
          int[] counts = new int[2];
          try (PreparedStatement s = c.prepareStatement(heldBackSql(cursors))) {
            s.setString(1, job);
            s.setInt(2, top);
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                rows.add(new HeldHost(r.getString(1), r.getDouble(2), r.getInt(3)));
                counts[0] = r.getInt(4);
                counts[1] = r.getInt(5);
              }
            }
          } catch (SQLException e) {
            if (!missingTable(e)) {
              throw e;
            }
          }
          return new HeldBack(rows, counts[0], counts[1]);
        });
  }

  /** The job's hosts locked out, with their open items. */
  public LockedOut lockedOut(String job, int top) throws SQLException {
    return connection.call(
        c -> {
          List<LockedHost> rows = new ArrayList<>();
          int hosts = 0;
          long open = 0;
          try (PreparedStatement s = c.prepareStatement(lockedOutSql(cursors + "_lockout"))) {
            s.setString(1, job);
            s.setInt(2, top);
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                rows.add(
                    new LockedHost(r.getString(1), r.getString(2), r.getString(3), r.getLong(4)));
                hosts = r.getInt(5);
                open = r.getLong(6);
              }
            }
          } catch (SQLException e) {
            if (!missingTable(e)) {
              throw e;
            }
          }
          return new LockedOut(rows, hosts, open);
        });
  }

  /** The job's hosts passed over by their failure bar in its latest run, and why. */
  public PassedOver passedOver(String job, int top) throws SQLException {
    return connection.call(
        c -> {
          List<FrontierStore.PassedOver> rows = new ArrayList<>();
          int hosts = 0;
          try (PreparedStatement s = c.prepareStatement(PASSED_OVER)) {
            s.setString(1, job);
            s.setInt(2, top);
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                rows.add(new FrontierStore.PassedOver(r.getString(1), r.getString(2)));
                hosts = r.getInt(3);
              }
            }
          }
          return new PassedOver(rows, hosts);
        });
  }

  /** Parameters: job, top. On the index {@code (job, host) WHERE passed_over IS NOT NULL}. */
  static final String PASSED_OVER =
      "SELECT host, passed_over, count(*) OVER ()"
          + " FROM pacer_frontier WHERE job = ? AND passed_over IS NOT NULL ORDER BY host LIMIT ?";

  /** The job's open items by host. */
  public Backlog backlog(String job, int top) throws SQLException {
    return connection.call(c -> backlog(c, job, top));
  }

  private static Backlog backlog(Connection c, String job, int top) throws SQLException {
    List<HostBacklog> rows = new ArrayList<>();
    HostBacklog slowest = null;
    int hosts = 0;
    long open = 0;
    try (PreparedStatement s = c.prepareStatement(BACKLOG)) {
      s.setString(1, job);
      s.setString(2, job);
      s.setInt(3, top);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          double rate = r.getDouble(4);
          HostBacklog row =
              new HostBacklog(
                  r.getString(2),
                  r.getLong(3),
                  r.wasNull() ? OptionalDouble.empty() : OptionalDouble.of(rate));
          hosts = r.getInt(5);
          open = r.getLong(6);
          if (r.getBoolean(1)) {
            slowest = row;
          } else {
            rows.add(row);
          }
        }
      }
    }
    return new Backlog(rows, hosts, open, Optional.ofNullable(slowest));
  }

  /**
   * Parameters: job, top. The job's frontier rows (its key) joined to their cursor rows, those
   * paused now or backed off; the longest pause first, then the widest backoff.
   */
  static String heldBackSql(String cursors) {
    return "WITH h AS (SELECT f.host,"
        + "   greatest(0, coalesce("
        + PacerTableSql.secondsFrom("clock_timestamp()", "c.paused_until")
        + ", 0))"
        + " AS pause, c.backoff"
        + "   FROM pacer_frontier f JOIN "
        + cursors
        + " c ON c.name = f.host"
        + "   WHERE f.job = ? AND (c.paused_until > clock_timestamp() OR c.backoff > 1))"
        + " SELECT host, pause, backoff, count(*) OVER (),"
        + "   count(*) FILTER (WHERE pause > 0) OVER ()"
        + " FROM h ORDER BY pause DESC, backoff DESC, host LIMIT ?";
  }

  /**
   * Parameters: job, top. The job's frontier rows joined to the lockouts, each with its open items
   * counted on the index {@code (job, host, seq)}; the latest lockout first.
   */
  static String lockedOutSql(String lockouts) {
    return "WITH h AS (SELECT f.host, l.reason, l.locked_at,"
        + "   (SELECT count(*) FROM pacer_item i WHERE i.job = f.job AND i.host = f.host"
        + "     AND i.state IN ('pending', 'leased')) AS open"
        + "   FROM pacer_frontier f JOIN "
        + lockouts
        + " l ON l.name = f.host WHERE f.job = ?)"
        + " SELECT host, reason, locked_at::text, open, count(*) OVER (), sum(open) OVER ()"
        + " FROM h ORDER BY locked_at DESC, host LIMIT ?";
  }

  /**
   * Parameters: job, job, top. The job's open items counted per host in one pass over the index
   * {@code (job, host, seq) WHERE state IN ('pending', 'leased')}, each host's ceiling from its
   * frontier row; the rows with the most open items (slowest false), then the one slowest to drain
   * at its ceiling (slowest true), each with the count of hosts and of open items.
   */
  static final String BACKLOG =
      "WITH b AS MATERIALIZED (SELECT host, count(*) AS open   FROM pacer_item WHERE job = ? AND"
          + " state IN ('pending', 'leased') GROUP BY host), d AS MATERIALIZED (SELECT b.host,"
          + " b.open, f.rate, b.open / f.rate AS drain,   count(*) OVER () AS hosts, sum(b.open)"
          + " OVER () AS total   FROM b LEFT JOIN pacer_frontier f ON f.job = ? AND f.host ="
          + " b.host) (SELECT false, host, open, rate, hosts, total FROM d ORDER BY open DESC, host"
          + " LIMIT ?) UNION ALL (SELECT true, host, open, rate, hosts, total FROM d   ORDER BY"
          + " drain DESC NULLS LAST, host LIMIT 1)";

  /** A table of Pacer's layout not yet created: no reservation was ever made at that place. */
  private static boolean missingTable(SQLException e) {
    return "42P01".equals(e.getSQLState());
  }
}
