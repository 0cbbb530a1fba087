package dev.pacer.cli.db;

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
 * The fleet-wide cursors and concurrency slots as {@code pacer status} shows them: read only,
 * never reserved from or taken.
 */
public final class CursorStatus {

  private final StoreConnection connection;

  CursorStatus(StoreConnection connection) {
    this.connection = connection;
  }

  /**
   * A destination's cursor: how far its next turn is ahead of the database clock, how long a pause
   * the destination asked for ({@code Retry-After}) still lasts (0 if none), its lockout, and the
   * fleet's backoff multiplier kept beside it (1 unless a FLEET-scope run was throttled).
   */
  public record CursorRow(String name, double aheadSeconds, double idleSeconds,
      double pauseSeconds, Optional<String> lockout, int fleetBackoff) {}

  /** Slots held under live leases, per destination that caps its concurrency fleet-wide. */
  public List<PostgresFleetSlots.Holding> fleetSlots() throws SQLException {
    return connection.call(PostgresFleetSlots::holdings);
  }

  public List<CursorRow> all() throws SQLException {
    return connection.call(c -> {
      Map<String, String> lockouts = lockouts(c);
      List<CursorRow> out = new ArrayList<>();
      // paused_until is read through to_jsonb so that a table from before pauses still reads.
      try (PreparedStatement s = c.prepareStatement(
          "SELECT name, extract(epoch FROM next_at - clock_timestamp()),"
              + " extract(epoch FROM clock_timestamp() - updated_at),"
              + " extract(epoch FROM (to_jsonb(c) ->> 'paused_until')::timestamptz"
              + " - clock_timestamp()), coalesce((to_jsonb(c) ->> 'backoff')::integer, 1)"
              + " FROM pacer_cursor c ORDER BY name");
          ResultSet r = s.executeQuery()) {
        while (r.next()) {
          String name = r.getString(1);
          out.add(new CursorRow(name, r.getDouble(2), r.getDouble(3), Math.max(0, r.getDouble(4)),
              Optional.ofNullable(lockouts.remove(name)), r.getInt(5)));
        }
      } catch (SQLException e) {
        if (!"42P01".equals(e.getSQLState())) {
          throw e;
        }
        // No reservation was ever made: the table does not exist yet.
      }
      lockouts.forEach((name, reason) ->
          out.add(new CursorRow(name, 0, 0, 0, Optional.of(reason), 1)));
      return out;
    });
  }

  private static Map<String, String> lockouts(Connection c) throws SQLException {
    Map<String, String> out = new HashMap<>();
    try (PreparedStatement s = c.prepareStatement(
        "SELECT name, reason || ' (since ' || locked_at || ')' FROM pacer_cursor_lockout");
        ResultSet r = s.executeQuery()) {
      while (r.next()) {
        out.put(r.getString(1), r.getString(2));
      }
    } catch (SQLException e) {
      if (!"42P01".equals(e.getSQLState())) {
        throw e;
      }
    }
    return out;
  }
}
