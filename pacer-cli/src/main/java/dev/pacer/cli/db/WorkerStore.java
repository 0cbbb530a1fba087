package dev.pacer.cli.db;

import dev.pacer.cli.model.LimiterFigures;
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
  public record WorkerRow(
      String id,
      String runId,
      String job,
      String destination,
      String host,
      long pid,
      String state,
      long requests,
      double rate,
      LimiterFigures limiter) {

    /** Rate-pressure answers this worker heard. */
    public long throttled() {
      return limiter.throttled();
    }

    /** Whether this worker's limiter paced locally when it last reported. */
    public boolean degraded() {
      return limiter.pacingLocally();
    }

    /** This worker's backoff multiplier when it last reported. */
    public int backoff() {
      return limiter.backoff();
    }
  }

  public void upsertWorker(WorkerRow w) throws SQLException {
    connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "INSERT INTO pacer_worker (id, run_id, job, destination, host, pid, state,"
                      + " requests, throttled, degraded, backoff, rate, turns_shared,"
                      + " turns_degraded, turns_refused, wait_nanos, wait_max_nanos, lockouts,"
                      + " cursor_latched) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                      + " ?, ?, ?) ON CONFLICT (id) DO UPDATE SET last_seen = now(), state ="
                      + " EXCLUDED.state, requests = EXCLUDED.requests, throttled ="
                      + " EXCLUDED.throttled, degraded = EXCLUDED.degraded, backoff ="
                      + " EXCLUDED.backoff, rate = EXCLUDED.rate, turns_shared ="
                      + " EXCLUDED.turns_shared, turns_degraded = EXCLUDED.turns_degraded,"
                      + " turns_refused = EXCLUDED.turns_refused, wait_nanos = EXCLUDED.wait_nanos,"
                      + " wait_max_nanos = EXCLUDED.wait_max_nanos, lockouts = EXCLUDED.lockouts,"
                      + " cursor_latched = EXCLUDED.cursor_latched")) {
            LimiterFigures f = w.limiter();
            s.setString(1, w.id());
            s.setString(2, w.runId());
            s.setString(3, w.job());
            s.setString(4, w.destination());
            s.setString(5, w.host());
            s.setLong(6, w.pid());
            s.setString(7, w.state());
            s.setLong(8, w.requests());
            s.setLong(9, f.throttled());
            s.setBoolean(10, f.pacingLocally());
            s.setInt(11, f.backoff());
            s.setDouble(12, w.rate());
            s.setLong(13, f.shared());
            s.setLong(14, f.degraded());
            s.setLong(15, f.refused());
            s.setLong(16, f.waitNanos());
            s.setLong(17, f.waitMaxNanos());
            s.setLong(18, f.lockouts());
            s.setBoolean(19, f.cursorLatched());
            return s.executeUpdate();
          }
        });
  }

  /** Workers of one run ({@code runId}), or every worker seen within {@code maxAgeSeconds}. */
  public List<WorkerRow> workers(String runId, double maxAgeSeconds) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT id, run_id, job, destination, host, pid, state, requests, rate,"
                      + " turns_shared, turns_degraded, turns_refused, wait_nanos, wait_max_nanos,"
                      + " throttled, lockouts, backoff, degraded, cursor_latched FROM pacer_worker"
                      + " WHERE (?::text IS NULL OR run_id = ?) AND (?::text IS NOT NULL OR"
                      + " last_seen > now() - ? * interval '1 second') ORDER BY started_at, id")) {
            s.setString(1, runId);
            s.setString(2, runId);
            s.setString(3, runId);
            s.setDouble(4, maxAgeSeconds);
            List<WorkerRow> out = new ArrayList<>();
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                out.add(
                    new WorkerRow(
                        r.getString(1),
                        r.getString(2),
                        r.getString(3),
                        r.getString(4),
                        r.getString(5),
                        r.getLong(6),
                        r.getString(7),
                        r.getLong(8),
                        r.getDouble(9),
                        new LimiterFigures(
                            r.getLong(10),
                            r.getLong(11),
                            r.getLong(12),
                            r.getLong(13),
                            r.getLong(14),
                            r.getLong(15),
                            r.getLong(16),
                            r.getInt(17),
                            r.getBoolean(18),
                            r.getBoolean(19))));
              }
            }
            return out;
          }
        });
  }
}
