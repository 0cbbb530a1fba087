package dev.pacer.cli.db;

import dev.pacer.cli.run.HaltReason;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Envelope trips: a breach recorded by the worker that saw it; open until acknowledged. */
public final class TripStore {

  private final StoreConnection connection;

  TripStore(StoreConnection connection) {
    this.connection = connection;
  }

  /** A recorded envelope breach. */
  public record Trip(long id, String job, HaltReason bar, String figures, String host, long pid,
      Instant trippedAt, Instant ackedAt, String ackNote) {}

  public long recordTrip(String job, HaltReason bar, String figures, String host,
      long pid) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "INSERT INTO pacer_trip (job, bar, figures, host, pid) VALUES (?, ?, ?, ?, ?)"
              + " RETURNING id")) {
        s.setString(1, job);
        s.setString(2, bar.name());
        s.setString(3, figures);
        s.setString(4, host);
        s.setLong(5, pid);
        try (ResultSet r = s.executeQuery()) {
          r.next();
          return r.getLong(1);
        }
      }
    });
  }

  /** The oldest unacknowledged trip of the job, if any. */
  public Optional<Trip> openTrip(String job) throws SQLException {
    List<Trip> trips = trips(job, true);
    return trips.isEmpty() ? Optional.empty() : Optional.of(trips.get(0));
  }

  /** Trips, oldest first; of one job or all ({@code job} null); only open ones if asked. */
  public List<Trip> trips(String job, boolean openOnly) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "SELECT id, job, bar, figures, host, pid, tripped_at, acked_at, ack_note FROM pacer_trip"
              + " WHERE (?::text IS NULL OR job = ?) AND (NOT ? OR acked_at IS NULL) ORDER BY id")) {
        s.setString(1, job);
        s.setString(2, job);
        s.setBoolean(3, openOnly);
        List<Trip> out = new ArrayList<>();
        try (ResultSet r = s.executeQuery()) {
          while (r.next()) {
            Timestamp acked = r.getTimestamp(8);
            out.add(new Trip(r.getLong(1), r.getString(2), HaltReason.valueOf(r.getString(3)), r.getString(4),
                r.getString(5), r.getLong(6), r.getTimestamp(7).toInstant(),
                acked == null ? null : acked.toInstant(), r.getString(9)));
          }
        }
        return out;
      }
    });
  }

  /** Acknowledges an open trip. False if there is no open trip with that id. */
  public boolean ackTrip(long id, String note) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_trip SET acked_at = now(), ack_note = ? WHERE id = ? AND acked_at IS NULL")) {
        s.setString(1, note);
        s.setLong(2, id);
        return s.executeUpdate() == 1;
      }
    });
  }
}
