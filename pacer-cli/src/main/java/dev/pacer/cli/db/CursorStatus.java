package dev.pacer.cli.db;

import dev.pacer.postgres.PostgresFleetSlots;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The fleet-wide cursors and concurrency slots as {@code pacer status} shows them: read only,
 * never reserved from or taken.
 */
public final class CursorStatus {

  private final StoreConnection connection;

  CursorStatus(StoreConnection connection) {
    this.connection = connection;
  }

  /** A destination's cursor: how far its next turn is ahead of the database clock. */
  public record CursorRow(String name, double aheadSeconds, double idleSeconds) {}

  /** Slots held under live leases, per destination that caps its concurrency fleet-wide. */
  public List<PostgresFleetSlots.Holding> fleetSlots() throws SQLException {
    return connection.call(PostgresFleetSlots::holdings);
  }

  public List<CursorRow> all() throws SQLException {
    return connection.call(c -> {
      List<CursorRow> out = new ArrayList<>();
      try (PreparedStatement s = c.prepareStatement(
          "SELECT name, extract(epoch FROM next_at - clock_timestamp()),"
              + " extract(epoch FROM clock_timestamp() - updated_at) FROM pacer_cursor ORDER BY name");
          ResultSet r = s.executeQuery()) {
        while (r.next()) {
          out.add(new CursorRow(r.getString(1), r.getDouble(2), r.getDouble(3)));
        }
      } catch (SQLException e) {
        if ("42P01".equals(e.getSQLState())) {
          return out; // no reservation was ever made: the table does not exist yet
        }
        throw e;
      }
      return out;
    });
  }
}
