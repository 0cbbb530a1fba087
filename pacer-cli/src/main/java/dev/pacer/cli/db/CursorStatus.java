package dev.pacer.cli.db;

import dev.pacer.postgres.PacerTableSql;
import dev.pacer.postgres.PostgresFleetSlots;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The fleet-wide cursors and concurrency slots as {@code pacer status} shows them: read only, never
 * reserved from or taken.
 */
public final class CursorStatus {

  private final StoreConnection connection;
  private final CursorPlace place;

  CursorStatus(StoreConnection connection, CursorPlace place) {
    this.connection = connection;
    this.place = place;
  }

  /**
   * A destination's cursor: how far its next turn is ahead of the database clock, how long a pause
   * the destination asked for ({@code Retry-After}) still lasts (0 if none), its lockout, and the
   * fleet's backoff multiplier kept beside it (1 unless a FLEET-scope run was throttled), and
   * whether it is a host of a per-host job that no single-destination job is named after ({@code
   * pacer status} shows those by job, through {@link HostStatus}: there may be thousands).
   */
  public record CursorRow(
      String name,
      double aheadSeconds,
      double idleSeconds,
      double pauseSeconds,
      Optional<String> lockout,
      int fleetBackoff,
      boolean perHostJobsHost) {}

  /** Slots held under live leases, per destination that caps its concurrency fleet-wide. */
  public List<PostgresFleetSlots.Holding> fleetSlots() throws SQLException {
    return connection.call(PostgresFleetSlots::holdings);
  }

  /**
   * Every cursor kept at the place, with its lockout. The table's name is spliced into the SQL: a
   * {@link CursorPlace} holds only names that {@code TableLayout} accepted as identifiers.
   */
  public List<CursorRow> all() throws SQLException {
    return connection.call(
        c -> {
          Map<String, Lockout> lockouts =
              place.layout() == CursorPlace.Layout.PACER
                  ? lockouts(c, place.table() + "_lockout")
                  : new HashMap<>();
          List<CursorRow> out = new ArrayList<>();
          try (PreparedStatement s =
              c.prepareStatement(
                  place.layout() == CursorPlace.Layout.PACER
                      ? pacerTableRows(place.table())
                      : cacheTableRows(place.table()))) {
            if (place.layout() == CursorPlace.Layout.DJANGO_CACHE) {
              s.setInt(1, place.keyPrefix().length());
              s.setInt(2, place.keyPrefix().length());
              s.setString(3, place.keyPrefix());
            }
            ResultSet r = s.executeQuery();
            while (r.next()) {
              String name = r.getString(1);
              Lockout lockout = lockouts.remove(name);
              out.add(
                  new CursorRow(
                      name,
                      r.getDouble(2),
                      r.getDouble(3),
                      Math.max(0, r.getDouble(4)),
                      Optional.ofNullable(lockout).map(Lockout::reason),
                      r.getInt(5),
                      r.getBoolean(6)));
            }
            r.close();
          } catch (SQLException e) {
            if (!"42P01".equals(e.getSQLState())) {
              throw e;
            }
            // No reservation was ever made: the table does not exist yet.
          }
          lockouts.forEach(
              (name, lockout) ->
                  out.add(
                      new CursorRow(
                          name,
                          0,
                          0,
                          0,
                          Optional.of(lockout.reason()),
                          1,
                          lockout.perHostJobsHost())));
          return out;
        });
  }

  /** paused_until and backoff are read through to_jsonb, so that an older table still reads. */
  /** A value the reservation statement reads as a cursor (epoch seconds as decimal text). */
  private static final String READABLE_VALUE =
      "'^\\s*[+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]{1,3})?\\s*$'";

  private static String pacerTableRows(String table) {
    return "SELECT name, "
        + PacerTableSql.secondsFrom("clock_timestamp()", "next_at")
        + ","
        + " -"
        + PacerTableSql.secondsFrom("clock_timestamp()", "updated_at")
        + ","
        + " "
        + PacerTableSql.secondsFrom(
            "clock_timestamp()", "(to_jsonb(c) ->> 'paused_until')::timestamptz")
        + ","
        + " coalesce((to_jsonb(c) ->> 'backoff')::integer, 1),"
        + PER_HOST_JOBS_HOST
        + " FROM "
        + table
        + " c ORDER BY name";
  }

  /**
   * Whether the row's {@code name} is a host of a per-host job and no job's destination. Both tests
   * are hashed subplans: each table is read once, whatever the number of rows.
   */
  private static final String PER_HOST_JOBS_HOST =
      " (name IN (SELECT host FROM pacer_frontier)"
          + " AND name NOT IN (SELECT destination FROM pacer_job))";

  private record Lockout(String reason, boolean perHostJobsHost) {}

  /**
   * A cache table's cursors are the rows under the prefix whose value is the cursor's epoch
   * seconds. Each reservation sets {@code expires} to 30 days after it, which says when it was
   * made; a pause moves the value itself, so it shows as a cursor ahead, and no backoff is kept.
   */
  private static String cacheTableRows(String table) {
    return "SELECT substr(cache_key, ? + 1),"
        + " value::numeric - extract(epoch FROM clock_timestamp()),"
        + " extract(epoch FROM clock_timestamp() - (expires - interval '30 days')), 0, 1,"
        + " false FROM "
        + table
        + " WHERE left(cache_key, ?) = ? AND value ~ "
        + READABLE_VALUE
        + " ORDER BY cache_key";
  }

  private static Map<String, Lockout> lockouts(Connection c, String table) throws SQLException {
    Map<String, Lockout> out = new HashMap<>();
    try (PreparedStatement s =
            c.prepareStatement(
                "SELECT name, reason || ' (since ' || locked_at || ')',"
                    + PER_HOST_JOBS_HOST
                    + " FROM "
                    + table);
        ResultSet r = s.executeQuery()) {
      while (r.next()) {
        out.put(r.getString(1), new Lockout(r.getString(2), r.getBoolean(3)));
      }
    } catch (SQLException e) {
      if (!"42P01".equals(e.getSQLState())) {
        throw e;
      }
    }
    return out;
  }
}
