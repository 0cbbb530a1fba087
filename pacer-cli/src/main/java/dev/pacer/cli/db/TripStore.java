package dev.pacer.cli.db;

import dev.pacer.cli.model.HaltReason;
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
  public record Trip(
      long id,
      String job,
      HaltReason bar,
      String figures,
      String host,
      long pid,
      Instant trippedAt,
      Instant ackedAt,
      String ackNote) {}

  /**
   * Records a trip and answers its id. Idempotent under {@code key}: run again with the same key (a
   * retry whose first answer was lost with the connection) it answers the same trip's id.
   *
   * @param key names this breach, as its recorder made it
   */
  public long recordTrip(
      String key, String job, HaltReason bar, String figures, String host, long pid)
      throws SQLException {
    return connection.durableTransaction(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "WITH inserted AS (INSERT INTO pacer_trip (trip_key, job, bar, figures, host,"
                      + " pid)   VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (trip_key) DO NOTHING"
                      + " RETURNING id) SELECT id FROM inserted UNION ALL SELECT id FROM pacer_trip"
                      + " WHERE trip_key = ? LIMIT 1")) {
            s.setString(1, key);
            s.setString(2, job);
            s.setString(3, bar.name());
            s.setString(4, figures);
            s.setString(5, host);
            s.setLong(6, pid);
            s.setString(7, key);
            try (ResultSet r = s.executeQuery()) {
              if (!r.next()) {
                // Only while another session's insert of the same key is still uncommitted.
                throw new SQLException("trip " + key + " is being recorded by another session");
              }
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
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT id, job, bar, figures, host, pid, tripped_at, acked_at, ack_note FROM"
                      + " pacer_trip WHERE (?::text IS NULL OR job = ?) AND (NOT ? OR acked_at IS"
                      + " NULL) ORDER BY id")) {
            s.setString(1, job);
            s.setString(2, job);
            s.setBoolean(3, openOnly);
            List<Trip> out = new ArrayList<>();
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                Timestamp acked = r.getTimestamp(8);
                out.add(
                    new Trip(
                        r.getLong(1),
                        r.getString(2),
                        HaltReason.valueOf(r.getString(3)),
                        r.getString(4),
                        r.getString(5),
                        r.getLong(6),
                        r.getTimestamp(7).toInstant(),
                        acked == null ? null : acked.toInstant(),
                        r.getString(9)));
              }
            }
            return out;
          }
        });
  }

  /** An acknowledged trip: its job and the bar it recorded. */
  public record Acked(String job, HaltReason bar) {}

  /**
   * Acknowledges an open trip; empty if there is no open trip with that id. A trip acknowledged
   * already with the same note answers as the acknowledgement did, and keeps its time: made again
   * after its answer was lost, the acknowledgement must not answer "no open trip" (and leave a
   * lockout it recorded in place).
   */
  public Optional<Acked> ackTrip(long id, String note) throws SQLException {
    return connection.durableTransaction(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "UPDATE pacer_trip SET acked_at = coalesce(acked_at, now()), ack_note = ? WHERE"
                      + " id = ? AND (acked_at IS NULL OR ack_note = ?) RETURNING job, bar")) {
            s.setString(1, note);
            s.setLong(2, id);
            s.setString(3, note);
            try (ResultSet r = s.executeQuery()) {
              return r.next()
                  ? Optional.of(new Acked(r.getString(1), HaltReason.valueOf(r.getString(2))))
                  : Optional.<Acked>empty();
            }
          }
        });
  }

  /** Open trips of a bar recorded by any job of {@code destination}, oldest first. */
  public List<Long> openTripsOfDestination(String destination, HaltReason bar) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT t.id FROM pacer_trip t JOIN pacer_job j ON j.name = t.job WHERE"
                      + " j.destination = ? AND t.bar = ? AND t.acked_at IS NULL ORDER BY t.id")) {
            s.setString(1, destination);
            s.setString(2, bar.name());
            List<Long> ids = new ArrayList<>();
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                ids.add(r.getLong(1));
              }
            }
            return ids;
          }
        });
  }
}
