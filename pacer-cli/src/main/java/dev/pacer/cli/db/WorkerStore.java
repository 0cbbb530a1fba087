package dev.pacer.cli.db;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/** Worker processes, as each reports itself every heartbeat. */
public final class WorkerStore {

  private final StoreConnection connection;

  WorkerStore(StoreConnection connection) {
    this.connection = connection;
  }

  /** What a worker process reports about itself each heartbeat. */
  public record WorkerRow(String id, String runId, String job, String destination, String host,
      long pid, String state, long requests, long throttled, boolean degraded, int backoff,
      double rate) {}

  public void upsertWorker(WorkerRow w) throws SQLException {
    connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "INSERT INTO pacer_worker (id, run_id, job, destination, host, pid, state, requests,"
              + " throttled, degraded, backoff, rate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
              + " ON CONFLICT (id) DO UPDATE SET last_seen = now(), state = EXCLUDED.state,"
              + " requests = EXCLUDED.requests, throttled = EXCLUDED.throttled,"
              + " degraded = EXCLUDED.degraded, backoff = EXCLUDED.backoff, rate = EXCLUDED.rate")) {
        s.setString(1, w.id());
        s.setString(2, w.runId());
        s.setString(3, w.job());
        s.setString(4, w.destination());
        s.setString(5, w.host());
        s.setLong(6, w.pid());
        s.setString(7, w.state());
        s.setLong(8, w.requests());
        s.setLong(9, w.throttled());
        s.setBoolean(10, w.degraded());
        s.setInt(11, w.backoff());
        s.setDouble(12, w.rate());
        return s.executeUpdate();
      }
    });
  }

  /** Workers of one run ({@code runId}), or every worker seen within {@code maxAgeSeconds}. */
  public List<WorkerRow> workers(String runId, double maxAgeSeconds)
      throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "SELECT id, run_id, job, destination, host, pid, state, requests, throttled, degraded,"
              + " backoff, rate FROM pacer_worker"
              + " WHERE (?::text IS NULL OR run_id = ?)"
              + " AND (?::text IS NOT NULL OR last_seen > now() - ? * interval '1 second')"
              + " ORDER BY started_at, id")) {
        s.setString(1, runId);
        s.setString(2, runId);
        s.setString(3, runId);
        s.setDouble(4, maxAgeSeconds);
        List<WorkerRow> out = new ArrayList<>();
        try (ResultSet r = s.executeQuery()) {
          while (r.next()) {
            out.add(new WorkerRow(r.getString(1), r.getString(2), r.getString(3), r.getString(4),
                r.getString(5), r.getLong(6), r.getString(7), r.getLong(8), r.getLong(9),
                r.getBoolean(10), r.getInt(11), r.getDouble(12)));
          }
        }
        return out;
      }
    });
  }
}
